package codemode

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

func capCode(err error) string {
	var ce *CapError
	if errors.As(err, &ce) {
		return string(ce.Code)
	}
	return ""
}

// TestKVBounds: keys and bytes are bounded per strand, at the bound and
// one past it, and strands never see each other's values.
func TestKVBounds(t *testing.T) {
	t.Parallel()
	k := newKVStore()
	for i := range maxKVKeys {
		if err := k.Set("a", fmt.Sprint(i), nil); err != nil {
			t.Fatalf("key %d of %d refused: %v", i, maxKVKeys, err)
		}
	}
	if err := k.Set("a", "one-more", nil); capCode(err) != string(codeKVFull) {
		t.Fatalf("key %d accepted: %v", maxKVKeys+1, err)
	}
	if err := k.Set("a", "0", []byte("replacing is no new key")); err != nil {
		t.Fatalf("replacing a value at the key bound: %v", err)
	}
	if err := k.Set("b", "big", make([]byte, maxKVBytes-len("big"))); err != nil {
		t.Fatalf("a value filling the byte bound exactly: %v", err)
	}
	if err := k.Set("b", "x", nil); capCode(err) != string(codeKVFull) {
		t.Fatalf("one byte past the bound: %v", err)
	}
	if v, ok, _ := k.Get("c", "0"); ok || v != nil && len(v) > 0 {
		t.Fatal("strand c sees strand a's value")
	}
	if err := k.Set("a", string(make([]byte, maxKVKeyBytes+1)), nil); capCode(err) != string(codeInvalidCapabilityArguments) {
		t.Fatalf("an over-long key: %v", err)
	}
}

// TestKVModel holds the store to a map per strand, under rapid.
func TestKVModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		k := newKVStore()
		model := map[string]map[string][]byte{}
		strand := rapid.SampledFrom([]string{"s1", "s2"})
		key := rapid.SampledFrom([]string{"a", "b", "c"})
		for range rapid.IntRange(1, 50).Draw(t, "ops") {
			s, kk := strand.Draw(t, "strand"), key.Draw(t, "key")
			if model[s] == nil {
				model[s] = map[string][]byte{}
			}
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				v := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "value")
				if err := k.Set(s, kk, v); err != nil {
					t.Fatal(err)
				}
				model[s][kk] = v
			case 1:
				had, _ := k.Delete(s, kk)
				_, want := model[s][kk]
				if had != want {
					t.Fatalf("Delete(%s, %s) = %v, model %v", s, kk, had, want)
				}
				delete(model[s], kk)
			case 2:
				v, ok, _ := k.Get(s, kk)
				mv, mok := model[s][kk]
				if ok != mok || !bytes.Equal(v, mv) {
					t.Fatalf("Get(%s, %s) = %q %v, model %q %v", s, kk, v, ok, mv, mok)
				}
			}
		}
	})
}
