/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The last configuration that loaded, kept so that corrald starts on it when the files in
 * the configuration directory do not load (a typo in a drop-in must not take the
 * machine's scheduler down). Kept as a copy of the files that loaded (corral.conf,
 * corral.conf.d/ and projects.d/ *.conf) in <statedir>/config.last-good, so it is read by
 * the same loader and an admin can diff it against /etc/corral. */

#include <stdint.h>

#include "config/config.h"

#define CONFIG_LASTGOOD_DIR "config.last-good"

/* Copies confdir's configuration files into <statedir>/config.last-good: written beside
 * it, checked to load (the files may have changed since they were loaded: -EINVAL, the
 * previous copy stays), then swapped in whole. */
int config_lastgood_save(const char *statedir, const char *confdir);
/* Loads the saved copy: -ENOENT when there is none; *ret_saved: when it was saved
 * (seconds since the epoch). */
int config_lastgood_load(const char *statedir, Config **ret, char **ret_error, uint64_t *ret_saved);
