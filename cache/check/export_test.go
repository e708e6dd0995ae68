package check

// MemAvailable gives the tests of package check_test the /proc/meminfo
// reader of Dir's --min-mem check.
var MemAvailable = memAvailable

// OK reports whether the cache passed, for the tests.
func (r *FilesReport) OK() bool { return len(r.Findings) == 0 }

// PlanAgainst gives the tests planAgainst, PlanModel's check of one folder.
var PlanAgainst = planAgainst
