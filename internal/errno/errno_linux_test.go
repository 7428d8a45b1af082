package errno

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

func TestName(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{unix.EPERM, "EPERM"},
		{fmt.Errorf("landlock_add_rule /x: %w", unix.EACCES), "landlock_add_rule /x: EACCES"},
		{errors.New("plain"), "plain"},
	} {
		if got := Name(tc.err); got != tc.want {
			t.Errorf("Name(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
