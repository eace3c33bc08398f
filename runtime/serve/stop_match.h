/* stop_match.h: stop strings over streamed text.
 *
 * A stop string may arrive split across tokens ("Sp" + "ot"), and what a
 * client has been sent cannot be taken back, so text that could still turn
 * into a stop string is held back until the next token decides it. A stop
 * string itself is never released.
 *
 * Contract: stop_match() looks at the text not yet released and says how
 * much of it may be released now. When a stop string occurs, *matched is
 * its index (the earliest occurrence wins; at equal positions the first
 * listed) and the return value is its offset: release that much and end.
 * Otherwise *matched = -1 and, unless final, the longest suffix that is a
 * proper prefix of some stop string is held back, and so is an incomplete
 * trailing UTF-8 sequence. Empty stop strings are ignored. Pure. */
#ifndef STRATA_STOP_MATCH_H
#define STRATA_STOP_MATCH_H

#include <stdbool.h>
#include <stddef.h>

size_t stop_match(const char *text, size_t len, const char *const *stops, size_t n_stops,
                  bool final, int *matched);

#endif
