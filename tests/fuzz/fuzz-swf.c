/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The SWF trace reader of corral-sim, on arbitrary text; small traces that parse are
 * then replayed through the scheduler, which must end (or refuse the trace with a
 * message), never deadlock. */

#include <errno.h>

#include "fuzz.h"
#include "sim.h"
#include "swf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *error = NULL;
        SwfTrace t = {};
        unsigned last_line = 0;
        FILE *f;
        int r;

        if (size == 0)
                return 0;
        f = fmemopen((void *) data, size, "r");
        fuzz_check(f);
        r = swf_parse(f, "fuzz.swf", &t, &error);
        fclose(f);
        if (r < 0) {
                fuzz_check(r == -ENOMEM || (r == -EINVAL && error));
                return 0;
        }
        fuzz_check(!error);
        fuzz_check(t.max_procs == -1 || t.max_procs > 0);
        fuzz_check(t.max_nodes == -1 || t.max_nodes > 0);
        for (size_t i = 0; i < t.n_jobs; i++) {
                fuzz_check(t.jobs[i].line > last_line);
                last_line = t.jobs[i].line;
        }

        if (t.n_jobs <= 64) {
                SimOptions o = { .numa_nodes = 1 + (unsigned) (size % 2), .exact_estimates = size % 3 == 0,
                                 .missing_estimate_runtime = size % 5 == 0 };
                SimStats s;

                r = sim_run(&t, &o, &s, &error);
                fuzz_check(r == 0 || r == -ENOMEM || (r == -EINVAL && error));
                if (r == 0) {
                        fuzz_check(s.simulated + s.skipped == t.n_jobs);
                        sim_stats_done(&s);
                }
        }
        swf_trace_done(&t);
        return 0;
}
