// Package list is the workflow of `ckpt cache ls` (Run): the header of
// every .tensorbin file of a cache folder, or of everything under a
// directory (cache.List is the engine), as the cache ls JSON document
// (Result) with its closing JSON Lines record (SummaryRecord). A listed
// cache folder whose build did not finish is named in Result.Unfinished.
//
// The package never prints.
package list
