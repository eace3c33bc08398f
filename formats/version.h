/* version.h: the version and build of the strata tools, for every tool's
 * --version.
 *
 * Contract: strata_version() is the release ("0.1.0"); strata_build_info()
 * names the compiler and target this build was made with (one line, no
 * trailing newline). Both return static strings that live for the program. */
#ifndef STRATA_VERSION_H
#define STRATA_VERSION_H

const char *strata_version(void);
const char *strata_build_info(void);

#endif
