package codemode

import (
	"fmt"
	"sync"
)

// Bounds of a strand's kv scratch space.
const (
	// maxKVKeys is how many keys one strand's space holds.
	maxKVKeys = 1024
	// maxKVKeyBytes bounds one key.
	maxKVKeyBytes = 256
	// maxKVBytes bounds one strand's space: keys and values together.
	maxKVBytes = 8 << 20
)

// kvStore is the scratch store behind a program's cap/kv: one space per
// strand, shared by every execution of that strand for as long as the
// Engine lives, never across strands. It is scratch: held in memory,
// bounded to 1024 keys and 8 MiB per strand (a set past either is
// refused, codeKVFull). Safe for concurrent use; the zero value is not
// usable, use newKVStore.
type kvStore struct {
	mu     sync.Mutex
	spaces map[string]*kvSpace
}

type kvSpace struct {
	vals  map[string][]byte
	bytes int
}

// newKVStore returns an empty store.
func newKVStore() *kvStore { return &kvStore{spaces: map[string]*kvSpace{}} }

func checkKey(key string) error {
	if key == "" || len(key) > maxKVKeyBytes {
		return &CapError{Code: codeInvalidCapabilityArguments, Message: fmt.Sprintf("a kv key is 1 to %d bytes (got %d)", maxKVKeyBytes, len(key))}
	}
	return nil
}

// Get returns a copy of strand's value under key and whether it is set.
func (k *kvStore) Get(strand, key string) ([]byte, bool, error) {
	if err := checkKey(key); err != nil {
		return nil, false, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	sp := k.spaces[strand]
	if sp == nil {
		return nil, false, nil
	}
	v, ok := sp.vals[key]
	return append([]byte{}, v...), ok, nil
}

// Set stores a copy of value under key in strand's space, refusing with
// codeKVFull a set that would pass 1024 keys or 8 MiB (replacing a
// value counts only the difference).
func (k *kvStore) Set(strand, key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	sp := k.spaces[strand]
	if sp == nil {
		sp = &kvSpace{vals: map[string][]byte{}}
		k.spaces[strand] = sp
	}
	old, had := sp.vals[key]
	grow := len(key) + len(value)
	if had {
		grow = len(value) - len(old)
	} else if len(sp.vals) >= maxKVKeys {
		return &CapError{Code: codeKVFull, Message: fmt.Sprintf("the kv space holds its maximum of %d keys; delete one first", maxKVKeys)}
	}
	if sp.bytes+grow > maxKVBytes {
		return &CapError{Code: codeKVFull, Message: fmt.Sprintf("the kv space would hold %d bytes, past its maximum of %d (keys and values); delete or shrink values first", sp.bytes+grow, maxKVBytes)}
	}
	sp.vals[key] = append([]byte{}, value...)
	sp.bytes += grow
	return nil
}

// Delete removes key from strand's space and reports whether it was set.
func (k *kvStore) Delete(strand, key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	sp := k.spaces[strand]
	if sp == nil {
		return false, nil
	}
	old, had := sp.vals[key]
	if had {
		delete(sp.vals, key)
		sp.bytes -= len(key) + len(old)
	}
	return had, nil
}
