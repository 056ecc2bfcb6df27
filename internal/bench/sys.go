package bench

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// procStatusKB reads a "Key:   123 kB" line of /proc/self/status or
// /proc/meminfo; 0 when unavailable (not Linux).
func procKB(path, key string) float64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		v, _ := strconv.ParseFloat(fields[0], 64)
		return v
	}
	return 0
}

// rssMB returns the process's resident set size (VmRSS) in MB.
func rssMB() float64 { return procKB("/proc/self/status", "VmRSS") / 1024 }

// rssAnonMB returns the anonymous part of the resident set (RssAnon) in
// MB: the process's own memory, without the file pages it maps (Badger
// memory-maps its tables and value log).
func rssAnonMB() float64 { return procKB("/proc/self/status", "RssAnon") / 1024 }

// memTotalGB returns the machine's memory in GB (MemTotal), 0 if unknown.
func memTotalGB() float64 {
	kb := procKB("/proc/meminfo", "MemTotal")
	return float64(int(kb/1024/1024*10+0.5)) / 10
}

// heapMB returns the live heap after a full collection, in MB.
func heapMB() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// dirSize returns the bytes the regular files under dir occupy on disk
// (allocated blocks where the platform reports them, so preallocated sparse
// files count for what they hold; else the apparent size).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += allocated(info)
			}
		}
		return nil
	})
	return n
}

// loadAvg returns the machine's load averages over 1, 5 and 15 minutes
// (/proc/loadavg); nil when unavailable (not Linux).
func loadAvg() []float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	out := make([]float64, 3)
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}

// cpuModel returns the processor's model name (/proc/cpuinfo); "" when
// unavailable.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
