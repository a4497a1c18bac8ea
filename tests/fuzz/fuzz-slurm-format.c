/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Slurm front ends' format parsers, with what users (and workflow managers) pass to
 * squeue -o/-O, sinfo -o/-O, sacct -o, sacct -S and scontrol show hostnames. Input: one
 * selector byte ('o' squeue -o, 'O' squeue -O, 'i' sinfo -o, 'N' sinfo -O, 'f' sacct -o,
 * 't' sacct -S, 'h' a host list), then the text. A host list expands to bounded names
 * that hold no delimiter or bracket. A format that
 * parses and checks prints a header and one line per job, no more lines than its
 * literal newlines allow; sacct -P prints each line with one '|' less than fields. */

#include <errno.h>

#include "fuzz.h"
#include "slurm/hostlist.h"
#include "slurm/slurm-format.h"
#include "strv.h"

#define NOW ((time_t) 1700000000)

static size_t count(const char *s, char c) {
        size_t n = 0;

        for (; s && *s; s++)
                n += *s == c;
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        JobInfo j = {
                .id = 42, .name = (char *) "wrap", .user = (char *) "alice", .project = (char *) "physics",
                .queue = (char *) "batch", .state = (char *) "RUNNING", .cpus = 4, .memory = UINT64_C(1) << 30,
                .walltime_sec = 3600, .submit_time = NOW - 100, .start_time = NOW - 65, .exit_code = -1,
                .node = (char *) "node1",
        };
        SqueueJob sj = { .info = &j };
        const JobInfo *jp = &j;
        SinfoPartition part = { .name = "batch", .is_default = true, .node = "node1", .cpus = 4 };
        SlurmFormat f = {};
        char *text, *out = NULL;
        size_t len = 0, literal_newlines = 0;
        FILE *m;
        int r;

        if (size < 1)
                return 0;
        text = fuzz_strndup(data + 1, size - 1);
        if (data[0] == 't') {
                uint64_t t;
                if (slurm_parse_time(text, NOW, &t) >= 0 && strncmp(text, "now-", 4) == 0)
                        fuzz_check(t <= (uint64_t) NOW);
                free(text);
                return 0;
        }

        if (data[0] == 'h') {
                char **hosts = NULL;
                size_t n = 0;

                r = slurm_hostlist_expand(text, &hosts, &n);
                if (r < 0)
                        fuzz_check(r == -EINVAL || r == -E2BIG || r == -ENOMEM);
                else {
                        fuzz_check(n <= SLURM_HOSTLIST_HOSTS_MAX && strv_length(hosts) == n);
                        STRV_FOREACH(h, hosts)
                                fuzz_check(**h && strlen(*h) <= SLURM_HOSTLIST_NAME_MAX &&
                                           !strpbrk(*h, ", \t\n[]"));
                        strv_free(hosts);
                }
                free(text);
                return 0;
        }

        switch (data[0]) {
        case 'N':
                r = sinfo_format_parse_long(text, &f, NULL);
                if (r == -EINVAL && f.n > 0) {
                        /* An unknown name: the parse is handed back for the message. */
                        slurm_format_done(&f);
                        free(text);
                        return 0;
                }
                break;
        case 'o':
        case 'i':
                r = slurm_format_parse(text, &f);
                break;
        case 'O':
                r = slurm_format_parse_long(text, &f);
                break;
        case 'f':
                r = slurm_fields_parse(text, &f);
                break;
        default:
                free(text);
                return 0;
        }
        if (r < 0) {
                fuzz_check(r == -EINVAL || r == -ENOMEM);
                fuzz_check(f.n == 0 && !f.items);
                free(text);
                return 0;
        }
        fuzz_check(f.n > 0);
        for (size_t i = 0; i < f.n; i++) {
                /* sinfo -O: the name and the field it resolved to; a suffix is text. */
                fuzz_check((f.items[i].text != NULL) + (f.items[i].name != NULL) + (f.items[i].field != 0) ==
                           (data[0] == 'N' && !f.items[i].text ? 2 : 1));
                literal_newlines += count(f.items[i].text, '\n');
        }

        m = open_memstream(&out, &len);
        fuzz_check(m);
        if (data[0] == 'o' || data[0] == 'O')
                r = squeue_format_check(&f, NULL) >= 0 ? squeue_print(m, &f, &sj, 1, true, NOW) : 1;
        else if (data[0] == 'i' || data[0] == 'N')
                r = sinfo_format_check(&f, NULL) >= 0 ? sinfo_print(m, &f, &part, 1, true) : 1;
        else
                r = sacct_fields_check(&f, NULL) >= 0 ? sacct_print(m, &f, &jp, 1, SACCT_PARSABLE2, true, NOW) : 1;
        fclose(m);
        if (r == 0) {
                size_t lines = count(out, '\n');
                fuzz_check(len > 0 && out[len - 1] == '\n');
                fuzz_check(lines == 2 + 2 * literal_newlines);
                if (data[0] == 'f')
                        /* The fields' values hold no '|': one separator between each two. */
                        fuzz_check(count(out, '|') == 2 * (f.n - 1));
        } else
                fuzz_check(r == 1);
        free(out);
        slurm_format_done(&f);
        free(text);
        return 0;
}
