//go:build !linux

package netcase

import "errors"

func setNice(int) error { return errors.New("setting the nice value of threads is not supported here") }
