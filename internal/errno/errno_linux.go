package errno

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// Name renders an error for a report: a bare errno as its symbolic
// name ("EPERM"), a wrapped one with its text's errno message replaced by
// the name ("landlock_add_rule /x: EACCES"), anything else as its text.
func Name(err error) string {
	if err == nil {
		return ""
	}
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return strings.Replace(err.Error(), e.Error(), n, 1)
		}
	}
	return err.Error()
}
