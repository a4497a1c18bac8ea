/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <pwd.h>
#include <unistd.h>
#include <errno.h>
#include <locale.h>
#include <string.h>

#include "log.h"
#include "slurm-common.h"
#include "strv.h"

void slurm_setup(const char *tool, Cli *cli, const char *verb) {
        (void) setlocale(LC_CTYPE, "");
        log_setup(tool, LOG_TARGET_STDERR);
        (void) log_parse_environment();
        *cli = (Cli) { .verb = verb, .timeout_ms = CLIENT_TIMEOUT_MS_DEFAULT };
}

int slurm_list_jobs(Cli *cli, json_object *filter, bool details, JobList *ret) {
        _cleanup_(job_list_done) JobList l = {};
        int r;

        if (!filter) {
                filter = json_object_new_object();
                if (!filter || json_add_strv(filter, "states", (char *[]) { (char *) "all", NULL }) < 0) {
                        json_object_put(filter);
                        return cli_oom();
                }
        }
        r = cli_list_jobs(cli, filter, &l);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (r > 0)
                return r;
        for (size_t i = 0; details && i < l.n; i++) {
                _cleanup_(reply_done) Reply reply = {};
                _cleanup_(job_entry_done) JobEntry e = {};
                json_object *job;

                r = cli_call(cli, CORRAL_METHOD_SHOW, json_job_id(l.items[i].info.id), &reply);
                if (r < 0)
                        return cli_exit_status_from_errno(r);
                /* Gone since the List (purged): keep what List said. */
                if (reply.error || !json_object_object_get_ex(reply.parameters, "job", &job) ||
                    job_entry_from_json(job, &e) < 0)
                        continue;
                job_entry_done(&l.items[i]);
                l.items[i] = e;
                e = (JobEntry) { .info = JOB_INFO_INIT };
        }
        *ret = l;
        l = (JobList) {};
        return 0;
}

bool slurm_list_contains(const char *list, const char *s) {
        size_t n;

        if (!list)
                return true;
        if (!s)
                return false;
        n = strlen(s);
        for (const char *p = list;;) {
                size_t k = strcspn(p, ",");
                if (k == n && strncasecmp(p, s, n) == 0)
                        return true;
                if (!p[k])
                        return false;
                p += k + 1;
        }
}

int slurm_parse_job_list(const char *list, JobRef **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ JobRef *refs = NULL;
        size_t n = 0;
        int r;

        r = strv_split(list, ",", &l);
        if (r < 0)
                return r;
        refs = new0(JobRef, strv_length(l) + 1);
        if (!refs)
                return -ENOMEM;
        STRV_FOREACH(s, l) {
                if (isempty(*s))
                        continue;
                r = job_ref_parse(*s, &refs[n]);
                if (r < 0)
                        return r;
                n++;
        }
        if (n == 0)
                return -EINVAL;
        *ret = TAKE_PTR(refs);
        *ret_n = n;
        return 0;
}

bool slurm_job_matches_refs(const JobInfo *j, const JobRef *refs, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (refs[i].has_task) {
                        if (j->array_job_id == refs[i].id && j->array_task_id == refs[i].task)
                                return true;
                } else if (j->id == refs[i].id || j->array_job_id == refs[i].id)
                        return true;
        }
        return false;
}

char *slurm_my_name(void) {
        struct passwd *pw = getpwuid(getuid());
        char *name = pw ? strdup(pw->pw_name) : NULL;

        if (!name)
                slurm_error("cannot find the name of uid %u", (unsigned) getuid());
        return name;
}
