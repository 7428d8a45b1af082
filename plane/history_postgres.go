package plane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/agentloom/loom/history"
	"github.com/agentloom/loom/history/postgres"
)

// historyOpenWait bounds connecting to and migrating the PostgreSQL
// index when New opens it.
const historyOpenWait = time.Minute

// historySchemaPrefix starts the PostgreSQL schema of a workspace's
// index when Config.HistorySchema is empty.
const historySchemaPrefix = "workspace_"

// openPostgresHistory opens the PostgreSQL index at cfg.HistoryURL for
// whichever of History and Memory the host left nil.
func (p *Plane) openPostgresHistory(cfg Config, ws string) (history.History, history.Memory, error) {
	schema := cfg.HistorySchema
	if schema == "" {
		sum := sha256.Sum256([]byte(ws))
		schema = historySchemaPrefix + hex.EncodeToString(sum[:])[:historyDigestChars]
	}
	ctx, cancel := context.WithTimeout(context.Background(), historyOpenWait)
	defer cancel()
	store, err := postgres.Open(ctx, cfg.HistoryURL, postgres.Options{Schema: schema})
	if err != nil {
		return nil, nil, fail(CodeSetupFailed, "history index", err)
	}
	p.closers = append(p.closers, store.Close)
	p.PostgresStore = store
	h, m := cfg.History, cfg.Memory
	if h == nil {
		h = store
	}
	if m == nil {
		m = store
	}
	return h, m, nil
}
