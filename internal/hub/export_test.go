package hub

// SetFree makes c see free bytes of free space (ok false: unknown).
func SetFree(c *Client, free uint64, ok bool) {
	c.free = func(string) (uint64, bool) { return free, ok }
}
