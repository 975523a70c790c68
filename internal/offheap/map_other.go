//go:build !linux

package offheap

import "errors"

const supported = false

var errUnsupported = errors.New("offheap: not supported on this system")

func mapBytes(int) ([]byte, error)                { return nil, errUnsupported }
func remapBytes([]byte, int, int) ([]byte, error) { return nil, errUnsupported }
func unmapBytes([]byte, int) error                { return errUnsupported }
