import Haul
import HaulCommands

// Before anything allocates: freed receive buffers stay with the process (see ProcessMemory).
ProcessMemory.keepFreedBuffers()
await HaulCommand.runAndExit()
