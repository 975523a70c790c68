package client

import "io"

// SetReadMediaStep makes a ReadMedia reader ask for at most n bytes per
// read_media call (MaxReadMediaBytes otherwise), so a test crosses calls
// with a small object.
func SetReadMediaStep(r io.ReadCloser, n int64) { r.(*mediaReader).step = n }
