import Haul
import HaulCommands

// haul with the fleet's PostgreSQL store linked in: `haul serve --store postgres://…` runs this
// program (see HaulServer's FleetOpening for why it is a program of its own).
ProcessMemory.setUpProgram()
await HaulCommand.runAndExit(fleet: PostgresFleet())
