//go:build !linux

package jail

// ErrnoName renders an error for a report: its text (only Linux names
// errnos).
func ErrnoName(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
