/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Users and groups as NSS gives them, remembered for a short while. Every submission
 * looked its user up (getpwuid) and its project's group (getgrgid/getgrnam): each lookup
 * reads nsswitch.conf's state and /etc/passwd or /etc/group again (or asks LDAP/SSSD,
 * which can take much longer), on the event loop. With the cache a user submitting many
 * jobs costs those lookups once a minute. Like nscd and Slurm's group cache, a change to
 * an account or a group's members is seen within that time (NSS_CACHE_TTL_USEC), a name
 * that did not exist within NSS_CACHE_NEGATIVE_TTL_USEC. */

#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

#define NSS_CACHE_TTL_USEC (60 * UINT64_C(1000000))
#define NSS_CACHE_NEGATIVE_TTL_USEC (5 * UINT64_C(1000000))
/* Entries of each kind: group names come from requests, so the table is bounded; when it
 * is full it starts again empty. */
#define NSS_CACHE_ENTRIES_MAX 4096U

/* Where the answers come from: libc's NSS in corrald, a table in tests. Each returns
 * storage the next call may overwrite, as getpwuid(3) does, or NULL for none. */
typedef struct NssOps {
        struct passwd *(*getpwuid)(uid_t uid);
        struct group *(*getgrgid)(gid_t gid);
        struct group *(*getgrnam)(const char *name);
        int (*getgrouplist)(const char *user, gid_t group, gid_t *groups, int *ngroups);
} NssOps;

extern const NssOps nss_ops_libc;

typedef struct NssCache NssCache;

NssCache *nss_cache_new(const NssOps *ops);
NssCache *nss_cache_free(NssCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(NssCache *, nss_cache_free);

/* As getpwuid(3), getgrgid(3) and getgrnam(3) (now: CLOCK_MONOTONIC µs). The entry
 * returned is the cache's: valid until the next lookup of the same kind. A NULL cache
 * asks NSS every time. NULL with errno ENOENT: no such user or group; ENOMEM. */
const struct passwd *nss_cache_getpwuid(NssCache *c, uid_t uid, uint64_t now);
const struct group *nss_cache_getgrgid(NssCache *c, gid_t gid, uint64_t now);
const struct group *nss_cache_getgrnam(NssCache *c, const char *name, uint64_t now);
/* As getgrouplist(3): user's groups, group among them, for the user of that uid (the
 * key: a user launching many jobs). *ret is the cache's, valid until the next call of
 * this kind. 0, or -ENOMEM, or -EIO when NSS fails. */
int nss_cache_getgrouplist(NssCache *c, const char *user, uid_t uid, gid_t group, uint64_t now, const gid_t **ret,
                           size_t *ret_n);
/* Forgets every entry: a configuration reload, when an admin may have just changed an
 * account and expects it to count now. */
void nss_cache_flush(NssCache *c);
