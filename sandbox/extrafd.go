package sandbox

// ExtraFileFD is the descriptor number at which a command receives
// CallSpec.ExtraFile. A jail keeps descriptors 3 and 4 for itself
// (neither survives into the command), so the first number free for a
// caller's descriptor is 5. A command with no ExtraFile has nothing open
// there; every descriptor other than 0, 1, 2 and ExtraFileFD is closed at
// exec.
const ExtraFileFD = 5
