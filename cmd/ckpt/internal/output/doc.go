// Package output renders command results: tables for a terminal (with
// tablewriter), plain stable text, CSV, Markdown, JSON and JSON Lines, and
// progress on stderr. Only cmd/ckpt uses it.
package output
