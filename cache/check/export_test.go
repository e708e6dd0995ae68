package check

// MemAvailable gives the tests of package check_test the /proc/meminfo
// reader of Dir's --min-mem check.
var MemAvailable = memAvailable
