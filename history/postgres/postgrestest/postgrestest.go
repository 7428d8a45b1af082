// Package postgrestest finds the PostgreSQL server tests run against and
// gives each test a schema of its own, dropped when the test ends.
package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URLEnv names the variable holding the libpq URL of the test database,
// for example postgres://loom@localhost:5432/loom_test?sslmode=disable.
// The role needs CREATE on that database (for schemas, and for pg_trgm
// unless a superuser installed it).
const URLEnv = "LOOM_TEST_POSTGRES_URL"

// RequireEnv, set to "1", makes URL fail rather than skip when no server
// is reachable. CI sets it after starting PostgreSQL, so the PostgreSQL
// index is always tested there, while `go test ./...` on a machine
// without one still passes and says what it left out.
const RequireEnv = "LOOM_REQUIRE_POSTGRES"

var (
	probeOnce sync.Once
	probeErr  error
)

// URL answers the test database's URL, or skips tb (fails it when
// RequireEnv is "1") when URLEnv is unset or the server cannot be reached.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(URLEnv)
	why := ""
	if url == "" {
		why = URLEnv + " is unset"
	} else {
		probeOnce.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, url)
			if err == nil {
				err = conn.Ping(ctx)
				conn.Close(ctx)
			}
			probeErr = err
		})
		if probeErr == nil {
			return url
		}
		why = "the server at " + URLEnv + " cannot be reached: " + probeErr.Error()
	}
	why += "; set " + URLEnv + " to a libpq URL (postgres://user@host:port/db) of a PostgreSQL 13+ database the test role may create schemas in, with pg_trgm available (postgresql-contrib), to test the PostgreSQL index"
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatal(why)
	}
	tb.Skip(why)
	return ""
}

// Schema answers the name of a fresh schema for tb, unique across
// processes, dropped with everything in it when tb ends. It does not
// create the schema.
func Schema(tb testing.TB, url string) string {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "loomtest_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() { Drop(tb, url, name) })
	return name
}

// Drop drops schema and everything in it.
func Drop(tb testing.TB, url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		tb.Errorf("dropping schema %s: %v", schema, err)
	}
}
