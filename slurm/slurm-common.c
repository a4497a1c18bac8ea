/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <grp.h>
#include <pwd.h>
#include <unistd.h>
#include <errno.h>
#include <locale.h>
#include <string.h>

#include "log.h"
#include "proto/device-info.h"
#include "slurm-common.h"
#include "strv.h"
#include "submit-options.h"

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

void slurm_owner_group(uid_t uid, uint32_t *ret_gid, const char **ret_name) {
        static uid_t last_uid = (uid_t) -1;
        static uint32_t last_gid;
        static char name[256];
        static bool have_name;

        if (uid != last_uid) {
                struct passwd *pw = getpwuid(uid);
                struct group *gr = pw ? getgrgid(pw->pw_gid) : NULL;

                last_uid = uid;
                last_gid = pw ? (uint32_t) pw->pw_gid : 0;
                have_name = gr && gr->gr_name[0] && strlen(gr->gr_name) < sizeof name;
                if (have_name)
                        strcpy(name, gr->gr_name);
        }
        *ret_gid = last_gid;
        *ret_name = have_name ? name : NULL;
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

/* "batch", "extern", "interactive" or a number: Slurm's step names. */
static bool step_name_is_valid(const char *s) {
        if (streq(s, "batch") || streq(s, "extern") || streq(s, "interactive"))
                return true;
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

int slurm_add_job_list(const char *list, JobRef **refs, size_t *n, size_t *n_steps) {
        _cleanup_strv_free_ char **l = NULL;
        JobRef *grown;
        size_t added = 0;
        int r;

        r = strv_split(list, ",", &l);
        if (r < 0)
                return r;
        if (strv_length(l) > SIZE_MAX / sizeof(JobRef) - *n - 1)
                return -ENOMEM;
        grown = reallocarray(*refs, *n + strv_length(l) + 1, sizeof(JobRef));
        if (!grown)
                return -ENOMEM;
        *refs = grown;
        STRV_FOREACH(s, l) {
                char *dot = strchr(*s, '.');

                if (isempty(*s))
                        continue;
                if (dot) {
                        JobRef unused;
                        /* A step: valid, and nothing here has steps. */
                        *dot = 0;
                        if (!step_name_is_valid(dot + 1) || job_ref_parse(*s, &unused) < 0)
                                return -EINVAL;
                        (*n_steps)++;
                        added++;
                        continue;
                }
                r = job_ref_parse(*s, &(*refs)[*n]);
                if (r < 0)
                        return r;
                (*n)++;
                added++;
        }
        return added > 0 ? 0 : -EINVAL;
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

uint64_t slurm_json_u64(json_object *o, const char *key) {
        json_object *v;
        uint64_t u = 0;

        if (json_object_object_get_ex(o, key, &v))
                (void) json_get_u64(v, 0, (uint64_t) INT64_MAX - 1, &u);
        return u;
}

const char *slurm_json_str(json_object *o, const char *key) {
        json_object *v;

        if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
                return json_object_get_string(v);
        return NULL;
}

int slurm_get_info(Cli *cli, Reply *reply) {
        int r = cli_call(cli, CORRAL_METHOD_GET_INFO, NULL, reply);
        if (r < 0)
                return cli_exit_status_from_errno(r);
        if (reply->error)
                return cli_report_error(cli, NULL, reply);
        return 0;
}

/* The machine as GetInfo and the jobs say: its CPUs in use, its GPUs as sinfo's GRES. */
int slurm_check_clusters(Cli *cli, const char *clusters, char **ret_name) {
        char name[256] = "";

        /* corrald's ClusterName is this host's name: the same rule as sbatch's -M. */
        if (gethostname(name, sizeof name - 1) < 0 || !name[0])
                strcpy(name, "localhost");
        if (!cluster_list_is_here(clusters)) {
                slurm_error("--clusters=%s: not supported on a single machine (its cluster is %s, or all)", clusters,
                            name);
                return 1;
        }
        if (ret_name && !(*ret_name = strdup(name)))
                return cli_oom();
        return 0;
}

int slurm_machine_state(Cli *cli, Reply *reply, unsigned *ret_allocated, char *gres, size_t gres_size,
                        char *gres_used, size_t gres_used_size) {
        _cleanup_(job_list_done) JobList l = {};
        json_object *devices;
        unsigned allocated = 0;
        int r;

        r = slurm_get_info(cli, reply);
        if (r != 0)
                return r;
        r = slurm_list_jobs(cli, json_object_new_object(), false, &l);
        if (r != 0)
                return r;
        for (size_t i = 0; i < l.n; i++)
                if (queue_section_of_state(l.items[i].info.state) == QUEUE_SECTION_ACTIVE)
                        allocated += l.items[i].info.cpus;
        gres[0] = 0;
        if (gres_used)
                gres_used[0] = 0;
        if (json_object_object_get_ex(reply->parameters, "devices", &devices)) {
                DeviceInfo *d = NULL;
                const char *field = NULL;
                size_t nd = 0;

                if (device_info_array_from_json(devices, &d, &nd, &field) < 0) {
                        slurm_error("corrald sent an invalid device list (%s)", strna(field));
                        return 1;
                }
                sinfo_format_gres(d, nd, gres, gres_size);
                if (gres_used)
                        sinfo_format_gres_used(d, nd, gres_used, gres_used_size);
                device_info_array_free(d, nd);
        }
        *ret_allocated = allocated;
        return 0;
}

/* Corral's name of the GPU NVML read as g: by UUID, else by PCI address (a declared
 * device has no UUID of discovery's). */
static const char *device_name_of(json_object *params, json_object *g) {
        const char *uuid = slurm_json_str(g, "uuid"), *pci = slurm_json_str(g, "pci_address");
        json_object *devices;

        if (!json_object_object_get_ex(params, "devices", &devices) || !json_object_is_type(devices, json_type_array))
                return NULL;
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < json_object_array_length(devices); i++) {
                        json_object *d = json_object_array_get_idx(devices, i);
                        const char *mine = slurm_json_str(d, pass == 0 ? "uuid" : "pci_address"),
                                   *theirs = pass == 0 ? uuid : pci;

                        /* By address, not a card gone from there (another's now). */
                        if (mine && theirs && strcasecmp(mine, theirs) == 0 && (pass == 0 || !slurm_json_str(d, "offline")))
                                return slurm_json_str(d, "name");
                }
        return NULL;
}

bool slurm_node_reason(json_object *params, char *buf, size_t size, const char **ret_user, uint64_t *ret_time) {
        json_object *telemetry, *gpus;
        size_t k = 0;

        assert(size > 0);
        buf[0] = '\0';
        *ret_user = NULL;
        *ret_time = 0;
        if (!json_object_object_get_ex(params, "gpu_telemetry", &telemetry) ||
            !json_object_object_get_ex(telemetry, "gpus", &gpus) || !json_object_is_type(gpus, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(gpus); i++) {
                json_object *g = json_object_array_get_idx(gpus, i), *outside;
                const char *uuid = slurm_json_str(g, "uuid"), *name = device_name_of(params, g);

                if (!json_object_object_get_ex(g, "outside_corral", &outside) ||
                    !json_object_is_type(outside, json_type_array) || json_object_array_length(outside) == 0)
                        continue;
                for (size_t p = 0; p < json_object_array_length(outside); p++) {
                        json_object *o = json_object_array_get_idx(outside, p);
                        const char *user = slurm_json_str(o, "user");
                        char who[64];
                        int w;

                        if (user)
                                snprintf(who, sizeof who, "%s", user);
                        else
                                snprintf(who, sizeof who, "uid %" PRIu64, slurm_json_u64(o, "uid"));
                        if (!*ret_user)
                                *ret_user = user;
                        w = p == 0 ? snprintf(buf + k, size - k, "%s%s in use outside Corral: pid %" PRIu64 " (%s)",
                                              k > 0 ? "; " : "", name ?: strna(uuid), slurm_json_u64(o, "pid"), who)
                                   : snprintf(buf + k, size - k, ", pid %" PRIu64 " (%s)", slurm_json_u64(o, "pid"), who);
                        if (w < 0 || (size_t) w >= size - k) {
                                k = size - 1;
                                break;
                        }
                        k += (size_t) w;
                }
        }
        if (k == 0)
                return false;
        *ret_time = slurm_json_u64(telemetry, "sampled");
        return true;
}
