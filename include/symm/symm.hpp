// symm/symm.hpp: the whole public API.
#pragma once

#include <symm/alltoallv.hpp>
#include <symm/atomic.hpp>
#include <symm/atomic_nbi.hpp>
#include <symm/barrier.hpp>
#include <symm/collectives.hpp>
#include <symm/concepts.hpp>
#include <symm/error.hpp>
#include <symm/format.hpp>
#include <symm/future.hpp>
#include <symm/group.hpp>
#include <symm/launch.hpp>
#include <symm/ordering.hpp>
#include <symm/pe_ref.hpp>
#include <symm/pe_span.hpp>
#include <symm/remote.hpp>
#include <symm/rma.hpp>
#include <symm/signal.hpp>
#include <symm/stream_sync.hpp>
#include <symm/symmetric.hpp>
#include <symm/team.hpp>
#include <symm/version.hpp>
#include <symm/wait.hpp>
#include <symm/wait_status.hpp>
#include <symm/world.hpp>
#include <symm/world_ref.hpp>
