package sandbox

// ExtraFileFD is the descriptor number at which a command receives its
// extra file (broker.CallSpec.ExtraFile). The helper's own configuration
// and report take descriptors 3 and 4 (neither survives into the
// command), so the first number free for a caller's descriptor is 5.
const ExtraFileFD = 5
