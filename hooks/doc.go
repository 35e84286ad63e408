// Package hooks defines the lifecycle hooks of spindle's asynchronous
// resources and async-local storage.
package hooks
