/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/identity.h"

static bool has_gid(const JobSpec *s, gid_t g) {
        for (size_t i = 0; i < s->n_supplementary_gids; i++)
                if (s->supplementary_gids[i] == g)
                        return true;
        return false;
}

/* A uid the user database does not know. */
static uid_t missing_uid(void) {
        for (uid_t u = 4000000000U;; u++)
                if (!getpwuid(u))
                        return u;
}

static void test_current_user(void **state) {
        _cleanup_job_spec_free_ JobSpec *s = new0(JobSpec, 1);
        const struct passwd *pw = getpwuid(getuid());
        _cleanup_free_ char *name = NULL;
        gid_t expect[4096];
        int n = (int) ELEMENTSOF(expect);

        if (!pw)
                skip(); /* a build user without a passwd entry */
        assert_non_null(name = strdup(pw->pw_name));
        assert_non_null(s);
        assert_int_equal(job_spec_resolve_identity(s, pw->pw_uid, pw->pw_gid), 0);
        assert_int_equal(s->uid, getuid());
        assert_int_equal(s->gid, pw->pw_gid);
        /* Exactly what the group database says, the primary group among them. */
        assert_true(getgrouplist(name, s->gid, expect, &n) >= 0);
        assert_int_equal(s->n_supplementary_gids, (size_t) n);
        for (int i = 0; i < n; i++)
                assert_true(has_gid(s, expect[i]));
        assert_true(has_gid(s, s->gid));
        /* Home and shell for the job's environment, so that the supervisor needs no
         * lookup of its own. */
        assert_string_equal(s->home, pw->pw_dir);
        assert_string_equal(s->shell, pw->pw_shell);
}

static void test_job_gid_joins_groups(void **state) {
        _cleanup_job_spec_free_ JobSpec *s = new0(JobSpec, 1);
        const struct passwd *pw = getpwuid(getuid());
        gid_t other = 54321;

        if (!pw)
                skip();
        assert_non_null(s);
        /* A job's gid need not be the user's primary group; it is always in the list. */
        assert_int_equal(job_spec_resolve_identity(s, pw->pw_uid, other), 0);
        assert_int_equal(s->gid, other);
        assert_true(has_gid(s, other));
}

static void test_replaces_groups(void **state) {
        _cleanup_job_spec_free_ JobSpec *s = new0(JobSpec, 1);
        const struct passwd *pw = getpwuid(getuid());

        if (!pw)
                skip();
        assert_non_null(s);
        assert_non_null(s->supplementary_gids = new(gid_t, 3));
        s->supplementary_gids[0] = 54322;
        s->supplementary_gids[1] = 54323;
        s->supplementary_gids[2] = 54324;
        s->n_supplementary_gids = 3;
        /* The old list is freed (the sanitizer build would see a leak) and none of it stays. */
        assert_int_equal(job_spec_resolve_identity(s, pw->pw_uid, pw->pw_gid), 0);
        assert_false(has_gid(s, 54322));
        assert_false(has_gid(s, 54324));
}

static void test_missing_uid(void **state) {
        _cleanup_job_spec_free_ JobSpec *s = new0(JobSpec, 1);
        uid_t u = missing_uid();

        assert_non_null(s);
        s->uid = 7;
        s->gid = 8;
        /* The user is gone: no identity, and the spec is left as it was. */
        assert_int_equal(job_spec_resolve_identity(s, u, 100), -ESRCH);
        assert_int_equal(s->uid, 7);
        assert_int_equal(s->gid, 8);
        assert_null(s->supplementary_gids);
        assert_int_equal(s->n_supplementary_gids, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_current_user),
                cmocka_unit_test(test_job_gid_joins_groups),
                cmocka_unit_test(test_replaces_groups),
                cmocka_unit_test(test_missing_uid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
