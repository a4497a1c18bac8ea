/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The readers of the real Slurm client's output a forwarding queue runs (forward/): what
 * sbatch, squeue, sacct and scontrol print, which corrald parses as root. Input: one
 * selector byte ('p' sbatch --parsable, 'q' squeue, 'k' squeue of keys, 'a' sacct, 'c' scontrol, 't' a
 * time, 'r' a MaxRSS), then the text. Whatever parses is within what it claims: ids never 0,
 * states Corral knows or NULL (squeue's: always known), times that fit; squeue's state
 * lines carry no user's text and no delimiter in a field. */

#include <errno.h>
#include <string.h>

#include "forward/slurm.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SlurmJobStatus *st = NULL;
        SlurmJobRecord *rec = NULL;
        char *text, *cluster = NULL;
        uint64_t u, sid;
        size_t n = 0;
        int r;

        if (size < 1)
                return 0;
        text = fuzz_strndup(data + 1, size - 1);
        switch (data[0]) {
        case 'p':
                r = slurm_parse_parsable(text, &u, &cluster);
                fuzz_check(r == 0 || r == -EBADMSG);
                fuzz_check(r < 0 || u > 0);
                free(cluster);
                break;
        case 'q':
                r = slurm_parse_squeue(text, &st, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++) {
                        fuzz_check(st[i].job_id > 0 && st[i].array_job_id > 0);
                        fuzz_check(st[i].state && st[i].reason && st[i].user && !st[i].comment);
                        fuzz_check(slurm_state_to_corral(st[i].state, st[i].reason) != NULL);
                        fuzz_check(!strpbrk(st[i].state, "| \n") && !strpbrk(st[i].reason, "|\n") &&
                                   !strpbrk(st[i].user, "| \n"));
                }
                slurm_job_status_free_many(st, r >= 0 ? n : 0);
                break;
        case 'k':
                r = slurm_parse_squeue_keys(text, &st, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(st[i].job_id > 0 && st[i].array_job_id > 0 && st[i].user && !st[i].state);
                if (r >= 0 && slurm_find_key(st, n, "host", 1, "user", NULL, NULL, &sid) >= 0)
                        fuzz_check(sid > 0);
                slurm_job_status_free_many(st, r >= 0 ? n : 0);
                break;
        case 'a':
                r = slurm_parse_sacct(text, &rec, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(rec[i].job_id > 0 && rec[i].state && rec[i].exit_code >= 0);
                slurm_job_record_free_many(rec, r >= 0 ? n : 0);
                break;
        case 'c':
                r = slurm_parse_scontrol(text, &rec, &n);
                fuzz_check(r >= 0);
                for (size_t i = 0; r >= 0 && i < n; i++)
                        fuzz_check(rec[i].job_id > 0 && rec[i].state && rec[i].exit_code >= 0 && rec[i].user);
                slurm_job_record_free_many(rec, r >= 0 ? n : 0);
                break;
        case 't':
                r = slurm_parse_time(text, &u);
                fuzz_check(r == 0 || r == -EBADMSG);
                break;
        case 'r':
                r = slurm_parse_rss(text, &u);
                fuzz_check(r == 0 || r == -EBADMSG || r == -ERANGE);
                break;
        default:
                break;
        }
        free(text);
        return 0;
}
