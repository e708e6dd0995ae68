package verify

// Names returns the tensor names the contract records.
func (c *Contract) Names() []string {
	out := make([]string, len(c.Tensors))
	for i, t := range c.Tensors {
		out[i] = t.Name
	}
	return out
}
