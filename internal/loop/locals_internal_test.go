package loop

import "testing"

type (
	localKeyA struct{}
	localKeyB struct{}
	localKeyS struct{ n int }
)

// Local finds each key's value, through its cache or the table, for pointer
// keys (the usual kind), keys of one type that are not pointers, and nil,
// and SetLocal replaces a value however it was found before.
func TestLocals(t *testing.T) {
	e := New(Config{})
	keys := []any{(*localKeyA)(nil), (*localKeyB)(nil), localKeyS{1}, localKeyS{2}, nil, new(int), new(int)}
	for round := range 3 {
		for i, k := range keys {
			if round == 0 {
				if v := e.Local(k); v != nil {
					t.Fatalf("key %d: %v before SetLocal", i, v)
				}
				e.SetLocal(k, i)
			}
			if round == 2 && i == 3 {
				e.SetLocal(k, 30)
			}
			want := i
			if round == 2 && i == 3 {
				want = 30
			}
			for range 2 { // once to fill the cache, once through it
				if v := e.Local(k); v != want {
					t.Fatalf("round %d, key %d: Local = %v, want %d", round, i, v, want)
				}
			}
		}
	}
	if v := e.Local(localKeyS{3}); v != nil {
		t.Fatalf("unknown key: %v", v)
	}
}
