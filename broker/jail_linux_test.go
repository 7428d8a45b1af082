package broker

import (
	"strings"
	"testing"
)

func TestReadHelperReport(t *testing.T) {
	for _, tc := range []struct {
		in          string
		layers      int
		fatal, exec string
		reported    bool
		jailPid     int
	}{
		{`{"jail_pid":42}` + "\n", 0, "helper ended before reporting", "", false, 42},
		{`{"jail_pid":42}` + "\n" + `{"layers":[{"name":"a","applied":true}]}` + "\n", 1, "", "", true, 42},
		{`{"layers":[{"name":"a","applied":true}]}` + "\n" + `{"jail_pid":7}` + "\n", 1, "", "", true, 7},
		{"", 0, "helper ended before reporting", "", false, 0},
		{`{"layers":[{"name":"seccomp","applied":true}]}` + "\n", 1, "", "", true, 0},
		{`{"layers":[{"name":"a","applied":true}]}` + "\n" + `{"exec":"exec x: ENOENT"}` + "\n", 1, "", "exec x: ENOENT", true, 0},
		{`{"fatal":"mount: EPERM"}` + "\n", 0, "mount: EPERM", "", true, 0},
		{"not json\n", 0, "malformed", "", true, 0},
	} {
		pid := 0
		layers, fatal, exec, _, reported := readHelperReport(strings.NewReader(tc.in), func(p int) { pid = p }, nil)
		if len(layers) != tc.layers || !strings.HasPrefix(fatal, tc.fatal) || exec != tc.exec || reported != tc.reported || pid != tc.jailPid {
			t.Errorf("%q: %v %q %q reported=%v pid=%d", tc.in, layers, fatal, exec, reported, pid)
		}
	}
}

func FuzzReadHelperReport(f *testing.F) {
	f.Add([]byte(`{"layers":[{"name":"landlock","applied":true,"detail":"abi 6"}]}` + "\n"))
	f.Add([]byte(`{"fatal":"x"}` + "\n" + `{"exec":"y"}`))
	f.Add([]byte("\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		layers, fatal, _, _, reported := readHelperReport(strings.NewReader(string(data)), func(int) {}, nil)
		if fatal == "" && len(data) == 0 {
			t.Fatal("an empty report must be fatal")
		}
		if !reported && fatal == "" {
			t.Fatal("a stream with no report must be fatal")
		}
		_ = layers
	})
}
