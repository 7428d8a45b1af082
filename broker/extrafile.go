package broker

import "github.com/agentloom/loom/broker/internal/jail"

// ExtraFileFD is the descriptor number at which a command receives
// CallSpec.ExtraFile (the helper's, jail.ExtraFileFD). The broker
// keeps descriptors 3 and 4 of every helper for its own configuration
// and report (neither survives into the command), so the first number
// free for a caller's descriptor is 5. A command with no ExtraFile has
// nothing open at ExtraFileFD; every descriptor of the command other
// than 0, 1, 2 and (with an ExtraFile) ExtraFileFD is closed at exec.
const ExtraFileFD = jail.ExtraFileFD
