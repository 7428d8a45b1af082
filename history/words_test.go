package history

import "testing"

func TestOrVariant(t *testing.T) {
	if got := orVariant(parseWords("retry back* OR loop")); got != "retry OR back* OR loop" {
		t.Errorf("orVariant = %q", got)
	}
}
