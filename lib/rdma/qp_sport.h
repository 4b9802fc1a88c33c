/*
 * qp_sport.h - applying a c4p-master's UDP source port to an RDMA QP.
 *
 * RoCEv2 packets carry the QP's traffic in UDP; the switches' ECMP hash
 * covers the UDP source port, so the port picks the path.  rdma-core
 * derives the source port from the GRH flow label (verbs.h,
 * ibv_flow_label_to_udp_sport):
 *
 *     low = fl & 0x3FFF;  high = (fl & 0xFC000) >> 14;
 *     sport = (low ^ high) | 0xC000
 *
 * so only ports 0xC000..0xFFFF (49152..65535, the catalog's range) can be
 * reached, and qp_sport_flow_label() returns the flow label with high = 0
 * that maps to a given port.  Two ways to apply it:
 *   - at INIT->RTR, put the flow label into the address vector's GRH
 *     (qp_sport_set_attr(), before ibv_modify_qp with IBV_QP_AV);
 *   - in RTS, on mlx5 devices, mlx5dv_modify_qp_udp_sport()
 *     (qp_sport_apply()), which also moves a connected QP later (after a
 *     PathReassign).
 * The verbs part is built only with rdma-core (C4_HAVE_RDMA); the mapping
 * is plain arithmetic.
 */
#ifndef C4_QP_SPORT_H
#define C4_QP_SPORT_H

#include <stdint.h>

#include "c4_build.h"

#define QP_SPORT_MIN	  0xC000u /* lowest port a flow label can give */
#define QP_SPORT_MAX	  0xFFFFu
#define QP_FLOW_LABEL_MAX 0xFFFFFu /* 20 bits */

/* The UDP source port rdma-core derives from flow label fl. */
uint16_t qp_sport_from_flow_label(uint32_t fl);
/*
 * The flow label that maps to sport; 0, or -1 when sport is below
 * QP_SPORT_MIN (no flow label reaches it).
 */
int qp_sport_flow_label(uint16_t sport, uint32_t *fl);

#if C4_HAVE_RDMA
#include <infiniband/verbs.h>

/*
 * Sets the GRH flow label in attr's address vector for INIT->RTR
 * (is_global is set; the caller fills dgid, sgid_index, hop_limit and
 * passes IBV_QP_AV).  0, or -1 (errno EINVAL) for a port out of range.
 */
int qp_sport_set_attr(struct ibv_qp_attr *attr, uint16_t sport);
/*
 * Sets the source port of a QP in RTS (mlx5 only); 0, or -1 with errno
 * (EOPNOTSUPP where the device cannot).
 */
int qp_sport_apply(struct ibv_qp *qp, uint16_t sport);
#endif

#endif
