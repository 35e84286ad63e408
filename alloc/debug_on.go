//go:build allocdebug

package alloc

import "reflect"

// debug enables FreeList's ownership checks. This build has them on; they
// cost a linear scan per Put and a reflective zero check per reused Get.
const debug = true

// checkZero panics if *p is not the zero value, which means its previous
// owner wrote to it after Put.
func checkZero[T any](p *T) {
	if !reflect.ValueOf(p).Elem().IsZero() {
		panic("alloc: object written after Put (use after Put)")
	}
}

// checkNotIn panics if p is already in free (a double Put).
func checkNotIn[T any](free []*T, p *T) {
	for _, q := range free {
		if q == p {
			panic("alloc: double Put of the same object")
		}
	}
}
