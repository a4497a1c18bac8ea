/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sacctmgr(1), read-only, on Corral's projects: "list user NAME format=account" gives the
 * projects (Slurm accounts) NAME may submit to, read from the same configuration corrald
 * reads (corral-projects(5)); without project files, every unix group of NAME is one. */

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/projects.h"
#include "log.h"
#include "slurm-common.h"
#include "strv.h"

/* Corral has no QOS: every association has Slurm's default one, which its database
 * creates. */
#define SLURM_QOS_DEFAULT "normal"

static void help(void) {
        printf("Usage: sacctmgr [-n] [-P|-p] [-s] list|show user [NAME...] [format=FIELDS]\n"
               "       sacctmgr [-n] [-P|-p] list|show account\n\n"
               "Read-only: Corral's projects as Slurm accounts. FIELDS: User, Account,\n"
               "DefaultAccount, QOS (Slurm's default, normal). See corral-slurm(7).\n");
}

/* The names of the unix groups user is in. */
static int user_groups(const struct passwd *pw, char ***ret) {
        _cleanup_free_ gid_t *gids = NULL;
        _cleanup_strv_free_ char **names = NULL;
        int n = 64;

        for (;;) {
                gid_t *g = reallocarray(gids, (size_t) n, sizeof(gid_t));
                int k = n;
                if (!g)
                        return -ENOMEM;
                gids = g;
                if (getgrouplist(pw->pw_name, pw->pw_gid, gids, &k) >= 0) {
                        n = k;
                        break;
                }
                if (k <= n)
                        return -EIO;
                n = k;
        }
        for (int i = 0; i < n; i++) {
                struct group *gr = getgrgid(gids[i]);
                if (gr && !strv_contains(names, gr->gr_name) && strv_extend(&names, gr->gr_name) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(names);
        return 0;
}

/* The projects user may use (Members=, DefaultFor=), the default first: the one corrald
 * charges a job that names none (DefaultFor=, else their only project, else the one
 * named as their primary group), as Snakemake takes the first line for its account. */
static int user_projects(const Config *c, const struct passwd *pw, char ***ret, char **ret_default) {
        _cleanup_strv_free_ char **groups = NULL, **out = NULL;
        _cleanup_free_ char *def = NULL;
        struct group *gr;
        const ProjectConfig *chosen = NULL;
        size_t n_member = 0;
        int r;

        r = user_groups(pw, &groups);
        if (r < 0)
                return r;
        gr = getgrgid(pw->pw_gid);
        if (c->n_projects == 0) {
                if (gr && !(def = strdup(gr->gr_name)))
                        return -ENOMEM;
                /* getgrouplist() puts the primary group first. */
                *ret = TAKE_PTR(groups);
                *ret_default = TAKE_PTR(def);
                return 0;
        }
        for (size_t i = 0; i < c->n_projects && !chosen; i++)
                if (strv_contains(c->projects[i].default_for, pw->pw_name))
                        chosen = &c->projects[i];
        for (size_t i = 0; i < c->n_projects; i++)
                n_member += project_has_member(&c->projects[i], pw->pw_name, (const char *const *) groups);
        for (size_t i = 0; i < c->n_projects && !chosen; i++) {
                const ProjectConfig *p = &c->projects[i];
                if (project_has_member(p, pw->pw_name, (const char *const *) groups) &&
                    (n_member == 1 || (gr && streq(p->name, gr->gr_name))))
                        chosen = p;
        }
        if (chosen && (strv_extend(&out, chosen->name) < 0 || !(def = strdup(chosen->name))))
                return -ENOMEM;
        for (size_t i = 0; i < c->n_projects; i++) {
                const ProjectConfig *p = &c->projects[i];
                if (p == chosen || (!project_has_member(p, pw->pw_name, (const char *const *) groups) &&
                                    !strv_contains(p->default_for, pw->pw_name)))
                        continue;
                if (strv_extend(&out, p->name) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        *ret_default = TAKE_PTR(def);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(slurm_format_done) SlurmFormat fmt = {};
        _cleanup_strv_free_ char **users = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ const char **values = NULL;
        _cleanup_strv_free_ char **cells = NULL;
        Config *c = NULL;
        SacctStyle style = SACCT_FIXED;
        bool header = true, accounts_only = false;
        const char *format = NULL, *bad = NULL;
        size_t n_rows = 0;
        int i = 1, r;

        log_setup("sacctmgr", LOG_TARGET_STDERR);
        for (; i < argc && argv[i][0] == '-'; i++) {
                const char *a = argv[i];
                if (streq(a, "-h") || streq(a, "--help")) {
                        help();
                        return 0;
                }
                for (const char *p = a + 1; *p && a[1] != '-'; p++)
                        switch (*p) {
                        case 'n':
                                header = false;
                                break;
                        case 'P':
                                style = SACCT_PARSABLE2;
                                break;
                        case 'p':
                                style = SACCT_PARSABLE;
                                break;
                        case 's': /* with associations: they are the accounts here */
                        case 'i':
                        case 'Q':
                                break;
                        default:
                                slurm_error("Unknown option: -%c", *p);
                                return 1;
                        }
                if (streq(a, "--noheader"))
                        header = false;
                else if (streq(a, "--parsable2"))
                        style = SACCT_PARSABLE2;
                else if (streq(a, "--parsable"))
                        style = SACCT_PARSABLE;
                else if (a[1] == '-' && !streq(a, "--associations") && !streq(a, "--immediate")) {
                        slurm_error("Unknown option: %s", a);
                        return 1;
                }
        }
        if (i >= argc || (!streq(argv[i], "list") && !streq(argv[i], "show"))) {
                slurm_error("only \"list\" and \"show\" are supported: Corral's projects are configured in "
                            "/etc/corral/projects.d (corral-projects(5))");
                return 1;
        }
        i++;
        if (i < argc && (strcaseeq(argv[i], "account") || strcaseeq(argv[i], "accounts")))
                accounts_only = true;
        else if (i >= argc || (!strcaseeq(argv[i], "user") && !strcaseeq(argv[i], "users"))) {
                slurm_error("only \"list user\" and \"list account\" are supported");
                return 1;
        }
        for (i++; i < argc; i++) {
                const char *a = argv[i];
                if (strncasecmp(a, "format=", 7) == 0)
                        format = a + 7;
                else if (strncasecmp(a, "name=", 5) == 0 || strncasecmp(a, "names=", 6) == 0 ||
                         strncasecmp(a, "user=", 5) == 0 || strncasecmp(a, "users=", 6) == 0) {
                        _cleanup_strv_free_ char **l = NULL;
                        if (strv_split(strchr(a, '=') + 1, ",", &l) < 0)
                                return cli_oom();
                        STRV_FOREACH(s, l)
                                if (strv_extend(&users, *s) < 0)
                                        return cli_oom();
                } else if (strcaseeq(a, "where") || strcaseeq(a, "withassoc") || strcaseeq(a, "withassocs"))
                        continue;
                else if (strncasecmp(a, "cluster=", 8) == 0 || strncasecmp(a, "clusters=", 9) == 0)
                        /* One machine is one cluster: whatever its name in the caller's
                         * configuration (Open OnDemand passes its own cluster id). */
                        continue;
                else if (strchr(a, '=')) {
                        slurm_error("Unknown condition: %s", a);
                        return 1;
                } else if (strv_extend(&users, a) < 0)
                        return cli_oom();
        }
        if (slurm_fields_parse(format ?: (accounts_only ? "Account" : "User,Account"), &fmt) < 0) {
                slurm_error("Invalid format: %s", format);
                return 1;
        }
        for (size_t k = 0; k < fmt.n; k++)
                if (!strcaseeq(fmt.items[k].name, "User") && !strcaseeq(fmt.items[k].name, "Account") &&
                    !strcaseeq(fmt.items[k].name, "DefaultAccount") && !strcaseeq(fmt.items[k].name, "QOS")) {
                        bad = fmt.items[k].name;
                        slurm_error("Unknown field '%s' (User, Account, DefaultAccount, QOS)", bad);
                        return 1;
                }

        r = config_load(CORRAL_CONFDIR, &c, &error);
        if (r < 0) {
                slurm_error("cannot read Corral's configuration: %s", error ?: strerror(-r));
                return 1;
        }
        if (accounts_only) {
                if (c->n_projects == 0) {
                        slurm_error("no projects are configured: every unix group is a project "
                                    "(list user NAME gives a user's)");
                        config_free(c);
                        return 1;
                }
                for (size_t k = 0; k < c->n_projects; k++)
                        for (size_t f = 0; f < fmt.n; f++)
                                if (strv_extend(&cells, strcaseeq(fmt.items[f].name, "Account") ? c->projects[k].name
                                                        : strcaseeq(fmt.items[f].name, "QOS")   ? SLURM_QOS_DEFAULT
                                                                                                : "") < 0)
                                        return cli_oom();
                n_rows = c->n_projects;
        } else {
                if (!users) {
                        struct passwd *pw = getpwuid(getuid());
                        if (!pw || strv_extend(&users, pw->pw_name) < 0)
                                return cli_oom();
                }
                STRV_FOREACH(u, users) {
                        _cleanup_strv_free_ char **projects = NULL;
                        _cleanup_free_ char *def = NULL;
                        struct passwd *pw = getpwnam(*u);

                        if (!pw)
                                continue; /* sacctmgr lists nothing for an unknown user */
                        r = user_projects(c, pw, &projects, &def);
                        if (r < 0) {
                                slurm_error("cannot find the groups of %s: %s", *u, strerror(-r));
                                config_free(c);
                                return 1;
                        }
                        STRV_FOREACH(p, projects) {
                                for (size_t f = 0; f < fmt.n; f++) {
                                        const char *name = fmt.items[f].name;
                                        const char *v = strcaseeq(name, "User")      ? pw->pw_name
                                                        : strcaseeq(name, "Account") ? *p
                                                        : strcaseeq(name, "QOS")     ? SLURM_QOS_DEFAULT
                                                                                     : strempty(def);
                                        if (strv_extend(&cells, v) < 0)
                                                return cli_oom();
                                }
                                n_rows++;
                        }
                }
        }
        config_free(c);
        values = new0(const char *, n_rows * fmt.n + 1);
        if (!values)
                return cli_oom();
        for (size_t k = 0; k < n_rows * fmt.n; k++)
                values[k] = cells[k];
        r = slurm_fields_print(stdout, &fmt, values, n_rows, style, header);
        return r < 0 ? 1 : 0;
}

SLURM_MAIN(run)
