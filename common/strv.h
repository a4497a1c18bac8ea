/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* NULL-terminated string arrays. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l) _pure_;
bool strv_contains(char *const *l, const char *s) _pure_;
/* Removes (and frees) every element equal to s, in place; whether there was one. */
bool strv_remove(char **l, const char *s);
/* Removes (and frees) every element not in keep, in place. */
void strv_keep_listed(char **l, char *const *keep);
/* Appends a copy of s; -ENOMEM on failure (l unchanged). */
int strv_extend(char ***l, const char *s);
/* Appends a formatted string; -ENOMEM on failure (l unchanged). */
int strv_extendf(char ***l, const char *fmt, ...) _printf_(2, 3);
/* Appends s itself, taking ownership only on success. */
int strv_push(char ***l, char *s);
char **strv_copy(char *const *l);
/* Splits at any of the separator characters, dropping empty fields. */
int strv_split(const char *s, const char *separators, char ***ret);

/* The value of NAME in a KEY=VALUE list, or NULL. */
const char *strv_env_get(char *const *l, const char *name) _pure_;

#define STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)
