package sqlite

import (
	"os"
	"testing"
)

// TestMain removes the directories shared across one test process (the
// fuzz oracle, the benchmark database) when it ends.
func TestMain(m *testing.M) {
	code := m.Run()
	if oracleDB != nil {
		oracleDB.store.Close()
		oracleDB.db.Close()
	}
	if benchStore != nil {
		benchStore.Close()
	}
	for _, dir := range []string{benchDir, oracleDir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}
