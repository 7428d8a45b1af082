package broker

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestUsernsDiagnosis(t *testing.T) {
	t.Parallel()
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	for _, tc := range []struct {
		name  string
		err   error
		files map[string]string
		want  string // substring; "" means no diagnosis
	}{
		{"apparmor", unix.EACCES, map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1\n"}, "AppArmor"},
		{"apparmor_off", unix.EACCES, map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "0\n"}, ""},
		{"debian", unix.EPERM, map[string]string{"/proc/sys/kernel/unprivileged_userns_clone": "0"}, "unprivileged_userns_clone"},
		{"max_zero", unix.ENOSPC, map[string]string{"/proc/sys/user/max_user_namespaces": "0"}, "max_user_namespaces"},
		{"container", unix.EPERM, map[string]string{"/.dockerenv": ""}, "container"},
		{"other_errno", unix.EINVAL, map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, ""},
		{"nothing_set", unix.EPERM, nil, ""},
		{"wrapped", errors.Join(errors.New("clone"), unix.EACCES), map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, "AppArmor"},
	} {
		got := usernsDiagnosis(tc.err, files(tc.files))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: usernsDiagnosis = %q, want it to mention %q", tc.name, got, tc.want)
		}
	}
}
