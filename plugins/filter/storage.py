# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the storage_client role: what the read-back found missing, and the Scale configuration."""

from __future__ import annotations


def storage_lnet_missing(section, readback):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback

    return _storage_readback.lnet_missing(section or {}, (readback or {}).get("observed") or {})


def storage_nvme_missing(section, readback):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback

    return _storage_readback.nvme_missing(section or {}, (readback or {}).get("observed") or {})


def storage_gpfs_unmounted(section, readback):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback

    return _storage_readback.gpfs_unmounted(section or {}, (readback or {}).get("observed") or {})


def storage_gpfs_changes(section, mmlsconfig_text, node):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import storage_readback as _storage_readback

    config = _storage_readback.parse_mmlsconfig(str(mmlsconfig_text or ""), str(node))
    return _storage_readback.gpfs_changes(section or {}, config)


def storage_csi_images(objects, driver):
    """Manifest objects (a driver the user keeps as manifests) with the plan's image choices applied."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi

    driver = driver or {}
    kept = [o for o in objects or [] if isinstance(o, dict) and o.get("kind")]
    return _plan_storage_csi.rewrite_images(kept, driver.get("images") or {}, driver.get("registry") or "")


def storage_csi_kustomization(helm_drivers, files):
    """The kustomization of the render directory as data (to_nice_yaml writes it)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi

    return _plan_storage_csi.kustomization(list(helm_drivers or []), list(files or []))


class FilterModule:
    def filters(self):
        return {
            "storage_lnet_missing": storage_lnet_missing,
            "storage_nvme_missing": storage_nvme_missing,
            "storage_gpfs_unmounted": storage_gpfs_unmounted,
            "storage_gpfs_changes": storage_gpfs_changes,
            "storage_csi_images": storage_csi_images,
            "storage_csi_kustomization": storage_csi_kustomization,
        }
