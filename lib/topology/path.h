/*
 * path.h: paths between two NIC ports and their enumeration.
 *
 * A path is (source port, uplink cable, downlink cable, destination port);
 * the ports give the sides and leaves, the cables the spine (both cables end
 * on the same spine). Two ports on the same leaf are joined by the direct
 * path only (up = down = TOPO_NONE): same-leaf traffic never crosses a spine.
 */
#ifndef C4_PATH_H
#define C4_PATH_H

#include "topo.h"

struct path {
	uint32_t src_port;
	uint32_t dst_port;
	uint32_t up;   /* leaf->spine cable, or TOPO_NONE when direct */
	uint32_t down; /* spine->leaf cable, or TOPO_NONE when direct */
};

/*
 * Writes up to max paths from src_port to dst_port into out (may be NULL
 * when max is 0), ordered by (spine, up cable, down cable), and returns how
 * many exist in total (may exceed max), health ignored. Returns -1 on bad
 * port ids.
 */
long path_enum(const struct topo *t, uint32_t src_port, uint32_t dst_port,
	       struct path *out, size_t max);

/* True when the ports and both cables of p are up. */
bool path_healthy(const struct topo *t, const struct path *p);
/* True when the path uses cable link (in either direction). */
bool path_uses_link(const struct path *p, uint32_t link);
/* The spine of p, or TOPO_NONE for a direct path. */
uint32_t path_spine(const struct topo *t, const struct path *p);
/* True when a and b have the same ports and cables. */
bool path_equal(const struct path *a, const struct path *b);
/* "host/nic:L leaf>spine>leaf host/nic:R" into buf. */
void path_format(const struct topo *t, const struct path *p, char *buf,
		 size_t len);

#endif /* C4_PATH_H */
