package loop

import (
	"testing"

	"github.com/spindle-rt/spindle/hooks"
)

// BenchmarkNewResource: the price of a resource's id and Init on the loop,
// beside a resource created with no hooks registered.
func BenchmarkNewResource(b *testing.B) {
	var n uint64
	for _, c := range []struct {
		name string
		h    *hooks.Hooks
	}{
		{"none", nil},
		{"init", &hooks.Hooks{Init: func(hooks.ID, hooks.Kind, hooks.ID) { n++ }}},
		{"resolve", &hooks.Hooks{Resolve: func(hooks.ID) { n++ }}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := New(Config{})
			defer e.Close()
			if c.h != nil {
				defer e.AddHooks(*c.h)()
			}
			e.Drive(func() {
				b.ResetTimer()
				for range b.N {
					id := e.NewResourceOnLoop(hooks.KindFuture, 0, true)
					e.ResolveHookOnLoop(id, true)
				}
			})
		})
	}
}
