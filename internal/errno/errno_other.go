//go:build !linux

package errno

// Name renders an error for a report: its text (only Linux names
// errnos).
func Name(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
