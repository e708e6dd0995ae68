package ckpt

// Words names a workflow's options in its caller's terms: the key is the Go
// name of a field of the workflow's Options ("ReadData", "Match"), the value
// what the caller calls that option (the CLI: its flag, "--read-data").
// Libraries that mention an option in a message, a finding or a hint of a
// JSON document spell it through Words, so they name no flag of any program;
// a caller that gives no words gets the Go spelling ("Options.ReadData").
type Words map[string]string

// Of is the caller's word for the option of the field named field, or
// "Options." + field when the caller gave none (a nil Words included).
func (w Words) Of(field string) string {
	if s, ok := w[field]; ok {
		return s
	}
	return "Options." + field
}
