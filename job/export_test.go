package job

// Test hooks: what the external tests of this package read of its
// unexported names (bounds no host sets, and the loop behind bash's auto
// mode). They exist only while testing.
const (
	MaxCursorTokenBytes = maxCursorTokenBytes
	MaxSendBytes        = maxSendBytes
	SchemePrefix        = schemePrefix
)

var (
	ReadURI = readURI
	Watch   = watch
)

type Watched = watched
