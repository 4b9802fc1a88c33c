/*
 * nic.h - NICs and NIC ports by the names people type: "HOST/NIC", an IP
 * of the topology, or "HOST/NIC/left|right".  Shared by the c4p-master
 * (requests and operator queries) and c4fabric (its port commands).
 */
#ifndef C4_NIC_H
#define C4_NIC_H

#include <stddef.h>
#include <stdint.h>

#include "topo.h"

/*
 * The NIC named s, as "HOST/NIC" or as one of its ports' IPv4 addresses;
 * TOPO_NONE when t has no such NIC.  Reads t and s only.
 */
uint32_t nic_lookup(const struct topo *t, const char *s);

/*
 * The NIC port named s as "HOST/NIC/left" or "HOST/NIC/right"; TOPO_NONE
 * when t has no such port or s has another form.  Reads t and s only.
 */
uint32_t nic_port_lookup(const struct topo *t, const char *s);

/*
 * Writes "HOST/NIC" of the NIC holding port into buf (len bytes, always
 * terminated), or "?" when t has no such port.
 */
void nic_name(const struct topo *t, uint32_t port, char *buf, size_t len);

#endif
