//go:build !allocdebug

package alloc

// debug enables FreeList's ownership checks; build with -tags allocdebug.
const debug = false

func checkZero[T any](*T)        {}
func checkNotIn[T any]([]*T, *T) {}
