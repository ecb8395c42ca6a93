import Haul
import HaulCommands

// Before anything allocates: how malloc keeps memory, and the loader's pages given back.
ProcessMemory.setUpProgram()
await HaulCommand.runAndExit()
