// Package check judges prebuilt tensor caches (package cache is their
// format) without changing them:
//
//   - Files holds a cache folder's files against its manifest and the plan
//     of the current source, fail-closed: every missing, extra, truncated,
//     corrupted or stale file is a ckpt.Finding (ids Finding*). Dir
//     checks one cache folder (memory, manifest, plan, Files; its
//     DirResult is the JSON document); Run, the workflow of `ckpt cache
//     verify` (one Options), runs it on every folder of a root (Result).
//   - PlanModel holds a mapping plan against an existing cache by names and
//     headers only (map --against-cache; package compare compares).
//
// Package identify, beside it, finds the profile and settings whose plan
// reproduces a cache (`ckpt cache identify`).
//
// The package never prints; long operations report through a nil-safe
// progress counter and honour context cancellation.
package check
