package source

// The names the (external) tests of source call, of the unexported
// helpers they test.

// HubToken is the hub token hubTokenFrom finds, for the tests.
func HubToken(getenv func(string) string) string {
	t, _ := hubTokenFrom(getenv)
	return t
}

// HubTokenFrom is hubTokenFrom, for the tests.
var HubTokenFrom = hubTokenFrom

// CacheRoot is hfCacheRoot, for the tests.
var CacheRoot = hfCacheRoot

// CacheStore is cacheStore, for the tests.
type CacheStore = cacheStore

// OpenCache is openCache, for the tests.
var OpenCache = openCache

// ParseRepo is parseRepo, for the tests.
var ParseRepo = parseRepo

// ParseRepoPath is parseRepoPath, for the tests.
var ParseRepoPath = parseRepoPath

// Offline is isOffline, for the tests.
var Offline = isOffline

// SnapshotPathOpener is snapshotPathOpener, for the tests.
var SnapshotPathOpener = snapshotPathOpener
