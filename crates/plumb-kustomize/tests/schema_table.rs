//! Checks the built-in schema table against what kustomize's Kubernetes 1.21.2 schema says, and
//! that the committed table is exactly what the generator produces.

use plumb_kustomize::schema;

use std::path::Path;
use std::process::Command;

use schema::{Definition, FieldShape, ListMerge, Resource, Schema, SchemaError, ShapeKind};

fn pod_spec() -> schema::TypeRef<'static> {
    Schema::builtin()
        .definition("io.k8s.api.core.v1.PodSpec")
        .expect("PodSpec is defined")
}

fn container() -> schema::TypeRef<'static> {
    Schema::builtin()
        .definition("io.k8s.api.core.v1.Container")
        .expect("Container is defined")
}

#[test]
fn containers_merge_by_name() {
    let containers = pod_spec().field("containers").unwrap();
    assert!(containers.is_list());
    assert!(!containers.is_scalar_list());
    assert_eq!(
        containers.item_type().unwrap().name(),
        "io.k8s.api.core.v1.Container"
    );
    assert_eq!(containers.merge_key(), Some("name"));
    assert!(containers.patch_strategy().merge);
    assert_eq!(
        containers.list_merge(),
        Some(ListMerge::ByKeys(vec!["name"]))
    );
    assert_eq!(
        pod_spec().field("initContainers").unwrap().list_merge(),
        Some(ListMerge::ByKeys(vec!["name"]))
    );
}

#[test]
fn container_ports_merge_by_container_port_and_protocol() {
    let ports = container().field("ports").unwrap();
    assert_eq!(ports.merge_key(), Some("containerPort"));
    // kyaml prefers x-kubernetes-list-map-keys to the single merge key.
    assert_eq!(ports.merge_keys(), vec!["containerPort", "protocol"]);
    assert_eq!(
        ports.list_merge(),
        Some(ListMerge::ByKeys(vec!["containerPort", "protocol"]))
    );
    assert_eq!(
        ports.item_type().unwrap().name(),
        "io.k8s.api.core.v1.ContainerPort"
    );
}

#[test]
fn container_env_and_mounts_merge_by_their_keys() {
    let env = container().field("env").unwrap();
    assert_eq!(env.list_merge(), Some(ListMerge::ByKeys(vec!["name"])));
    assert_eq!(env.item_type().unwrap().name(), "io.k8s.api.core.v1.EnvVar");
    let mounts = container().field("volumeMounts").unwrap();
    assert_eq!(
        mounts.list_merge(),
        Some(ListMerge::ByKeys(vec!["mountPath"]))
    );
    // envFrom has no strategy in 1.21.2: replaced, even though its elements are objects.
    assert_eq!(
        container().field("envFrom").unwrap().list_merge(),
        Some(ListMerge::Replace)
    );
}

#[test]
fn tolerations_have_no_strategy_and_are_replaced() {
    let tolerations = pod_spec().field("tolerations").unwrap();
    assert!(tolerations.is_list());
    assert_eq!(tolerations.shape().strategy, None);
    assert_eq!(
        tolerations.patch_strategy(),
        schema::PatchStrategy::default()
    );
    assert_eq!(tolerations.merge_key(), None);
    assert!(tolerations.merge_keys().is_empty());
    assert_eq!(tolerations.list_merge(), Some(ListMerge::Replace));
    assert_eq!(
        tolerations.item_type().unwrap().name(),
        "io.k8s.api.core.v1.Toleration"
    );
}

#[test]
fn volumes_merge_by_name_and_retain_keys() {
    let volumes = pod_spec().field("volumes").unwrap();
    let strategy = volumes.patch_strategy();
    assert!(strategy.merge && strategy.retain_keys && !strategy.replace);
    assert_eq!(
        volumes.shape().strategy.as_deref(),
        Some("merge,retainKeys")
    );
    assert_eq!(volumes.list_merge(), Some(ListMerge::ByKeys(vec!["name"])));
}

#[test]
fn image_pull_secrets_merge_by_name() {
    let secrets = pod_spec().field("imagePullSecrets").unwrap();
    assert_eq!(secrets.list_merge(), Some(ListMerge::ByKeys(vec!["name"])));
    assert_eq!(
        secrets.item_type().unwrap().name(),
        "io.k8s.api.core.v1.LocalObjectReference"
    );
}

#[test]
fn finalizers_are_a_scalar_list_merged_as_a_set() {
    let meta = Schema::builtin()
        .definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .unwrap();
    let finalizers = meta.field("finalizers").unwrap();
    assert!(finalizers.is_scalar_list());
    assert!(finalizers.item_type().is_none());
    assert!(finalizers.patch_strategy().merge);
    assert_eq!(finalizers.merge_key(), None);
    assert_eq!(finalizers.list_merge(), Some(ListMerge::Set));
}

#[test]
fn owner_references_merge_by_uid() {
    let meta = Schema::builtin()
        .definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .unwrap();
    let owners = meta.field("ownerReferences").unwrap();
    assert_eq!(owners.list_merge(), Some(ListMerge::ByKeys(vec!["uid"])));
    assert_eq!(
        owners.item_type().unwrap().name(),
        "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"
    );
}

#[test]
fn scalar_fields_are_absent_and_maps_are_marked() {
    assert!(container().field("image").is_none());
    assert!(container().field("noSuchField").is_none());
    let meta = Schema::builtin()
        .definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .unwrap();
    let labels = meta.field("labels").unwrap();
    assert!(labels.is_map() && !labels.is_list());
    assert_eq!(labels.values().unwrap().shape().kind, ShapeKind::Scalar);
    assert!(labels.value_type().is_none());
    assert_eq!(labels.list_merge(), None);

    let props = Schema::builtin()
        .definition("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
        .unwrap();
    let properties = props.field("properties").unwrap();
    assert_eq!(properties.value_type().unwrap().name(), props.name());
}

#[test]
fn deployment_reaches_pod_template_containers() {
    let deployment = Schema::builtin().type_for("apps/v1", "Deployment").unwrap();
    assert_eq!(deployment.name(), "io.k8s.api.apps.v1.Deployment");
    let template = deployment.lookup(&["spec", "template"]).unwrap();
    assert_eq!(
        template.object_type().unwrap().name(),
        "io.k8s.api.core.v1.PodTemplateSpec"
    );
    let containers = deployment
        .lookup(&["spec", "template", "spec", "containers"])
        .unwrap();
    assert_eq!(
        containers.list_merge(),
        Some(ListMerge::ByKeys(vec!["name"]))
    );
    // lookup steps into list elements.
    let ports = deployment
        .lookup(&["spec", "template", "spec", "containers", "ports"])
        .unwrap();
    assert_eq!(ports.merge_key(), Some("containerPort"));
    // DeploymentSpec.strategy carries retainKeys on an object field.
    let strategy = deployment.lookup(&["spec", "strategy"]).unwrap();
    assert!(strategy.patch_strategy().retain_keys);
    assert!(strategy.object_type().is_some());
    assert!(deployment.lookup(&["spec", "replicas", "x"]).is_none());
}

#[test]
fn namespaced_kinds() {
    let schema = Schema::builtin();
    for (api_version, kind) in [
        ("v1", "ConfigMap"),
        ("apps/v1", "Deployment"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("v1", "Secret"),
        ("batch/v1", "CronJob"),
        ("networking.k8s.io/v1", "Ingress"),
    ] {
        assert_eq!(
            schema.is_namespaced(api_version, kind),
            Some(true),
            "{api_version} {kind}"
        );
    }
}

#[test]
fn cluster_scoped_kinds() {
    let schema = Schema::builtin();
    for (api_version, kind) in [
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("v1", "Namespace"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"),
        ("v1", "PersistentVolume"),
        ("storage.k8s.io/v1", "StorageClass"),
    ] {
        assert_eq!(
            schema.is_namespaced(api_version, kind),
            Some(false),
            "{api_version} {kind}"
        );
    }
}

#[test]
fn unknown_kinds_and_scopes_are_none() {
    let schema = Schema::builtin();
    assert_eq!(schema.is_namespaced("example.com/v1", "Widget"), None);
    assert!(schema.type_for("example.com/v1", "Widget").is_none());
    // kustomize keys on the exact apiVersion: a version 1.21.2 does not serve is unknown.
    assert_eq!(schema.is_namespaced("apps/v1beta1", "Deployment"), None);
    assert!(schema.type_for("apps/v1beta1", "Deployment").is_none());
    // A kind with a definition but no API path of its own has no scope.
    assert!(schema.type_for("apps/v1", "DeploymentList").is_some());
    assert_eq!(schema.is_namespaced("apps/v1", "DeploymentList"), None);
    // A kind with an API path but no definition has a scope only.
    assert_eq!(schema.is_namespaced("v1", "PodExecOptions"), Some(true));
    assert!(schema.type_for("v1", "PodExecOptions").is_none());
}

#[test]
fn builtin_table_is_complete() {
    let schema = Schema::builtin();
    assert!(
        schema.missing_definitions().is_empty(),
        "{:?}",
        schema.missing_definitions()
    );
    assert_eq!(schema.resource_count(), 275);
    assert_eq!(schema.definition_count(), 612);
}

#[test]
fn builtin_definitions_read_on_first_use_equal_the_table_read_at_once() {
    let text = include_str!("../data/k8s-1.21.2-schema.json");
    let eager = Schema::from_table_json(text).unwrap();
    let builtin = Schema::builtin();
    let names: Vec<String> = serde_json::from_str::<serde_json::Value>(text).unwrap()
        ["definitions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(names.len(), 612);
    for name in &names {
        let (a, b) = (eager.definition(name), builtin.definition(name));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            (a.name(), a.fields().count()),
            (b.name(), b.fields().count())
        );
        for ((fa, sa), (fb, sb)) in a.fields().zip(b.fields()) {
            assert_eq!((fa, sa.shape()), (fb, sb.shape()), "{name}");
        }
    }
    assert!(builtin.definition("io.k8s.example.Nothing").is_none());
}

#[test]
fn a_definition_added_over_the_builtin_one_wins_until_the_builtin_is_extended_back() {
    let pod = "io.k8s.api.core.v1.PodSpec";
    let mut schema = Schema::builtin().clone();
    schema.add_definition(pod, Definition::default());
    assert_eq!(schema.definition(pod).unwrap().fields().count(), 0);
    assert_eq!(schema.definition_count(), 612);
    // The compiled-in schema itself is untouched.
    assert!(Schema::builtin().definition(pod).unwrap().fields().count() > 10);

    // As for an `openapi:` schema read alongside the built-in one: the built-in's win.
    let mut custom = Schema::default();
    custom.add_definition(pod, Definition::default());
    custom.add_definition("com.example.v1.Widget", Definition::default());
    custom.extend_from(Schema::builtin());
    assert!(custom.definition(pod).unwrap().fields().count() > 10);
    assert_eq!(custom.definition_count(), 613);

    // Extending with an overlay that carries the compiled-in table adds all of it.
    let mut plain = Schema::default();
    plain.add_definition(pod, Definition::default());
    plain.extend(Schema::builtin().clone());
    assert!(plain.definition(pod).unwrap().fields().count() > 10);
    assert_eq!(plain.definition_count(), 612);
}

#[test]
fn overlay_adds_a_custom_resource() {
    let overlay = Schema::from_table_json(
        r#"{
          "resources": {"example.com/v1": {"Widget": {"definition": "com.example.v1.Widget", "namespaced": true}}},
          "definitions": {
            "com.example.v1.Widget": {"fields": {
              "metadata": {"ref": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
              "parts": {"items": {"ref": "com.example.v1.Part"}, "strategy": "merge", "key": "id"}
            }},
            "com.example.v1.Part": {}
          }
        }"#,
    )
    .unwrap();
    // Alone, the overlay refers to ObjectMeta, which only the built-in schema defines.
    assert_eq!(
        overlay.missing_definitions(),
        vec!["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
    );

    let mut schema = Schema::builtin().clone();
    schema.extend(overlay);
    schema.add_resource(
        "example.com/v1",
        "Gadget",
        Resource {
            definition: None,
            namespaced: Some(false),
        },
    );
    schema.add_definition("com.example.v1.Empty", Definition::default());

    assert!(schema.missing_definitions().is_empty());
    assert_eq!(schema.is_namespaced("example.com/v1", "Widget"), Some(true));
    assert_eq!(
        schema.is_namespaced("example.com/v1", "Gadget"),
        Some(false)
    );
    let widget = schema.type_for("example.com/v1", "Widget").unwrap();
    assert_eq!(
        widget.lookup(&["parts"]).unwrap().list_merge(),
        Some(ListMerge::ByKeys(vec!["id"]))
    );
    assert_eq!(
        widget
            .lookup(&["metadata", "finalizers"])
            .unwrap()
            .list_merge(),
        Some(ListMerge::Set)
    );
    // The built-in kinds are still there.
    assert_eq!(schema.is_namespaced("v1", "Namespace"), Some(false));
    assert_eq!(
        FieldShape::new(ShapeKind::Scalar),
        FieldShape {
            kind: ShapeKind::Scalar,
            strategy: None,
            merge_key: None,
            map_keys: vec![]
        }
    );
}

#[test]
fn malformed_tables_are_rejected_with_a_path() {
    let ambiguous = r#"{"definitions": {"a.B": {"fields": {"x": {"ref": "a.C", "items": {}}}}}}"#;
    match Schema::from_table_json(ambiguous) {
        Err(SchemaError::Format { path, .. }) => assert_eq!(path, "definitions.a.B.fields.x.items"),
        other => panic!("expected a format error, got {other:?}"),
    }
    let unknown = r#"{"resources": {"v1": {"Pod": {"scope": "Namespaced"}}}}"#;
    match Schema::from_table_json(unknown) {
        Err(SchemaError::Format { path, message }) => {
            assert_eq!(path, "resources.v1.Pod.scope");
            assert!(message.contains("unknown key"), "{message}");
        }
        other => panic!("expected a format error, got {other:?}"),
    }
    assert!(matches!(
        Schema::from_table_json("{"),
        Err(SchemaError::Json(_))
    ));
}

#[test]
fn committed_table_matches_the_generator() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let committed = repo.join("crates/plumb-kustomize/data/k8s-1.21.2-schema.json");
    let regenerated = Path::new(env!("CARGO_TARGET_TMPDIR")).join("k8s-1.21.2-schema.json");
    let output = Command::new("python3")
        .arg(repo.join("scripts/gen-openapi-table.py"))
        .arg("--output")
        .arg(&regenerated)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 is needed to check the generated schema table and could not be run: {e}"
            )
        });
    assert!(
        output.status.success(),
        "scripts/gen-openapi-table.py failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = std::fs::read_to_string(&regenerated).unwrap();
    let actual = std::fs::read_to_string(&committed).unwrap();
    assert!(
        expected == actual,
        "{} is out of date: run scripts/gen-openapi-table.py and commit the result",
        committed.display()
    );
}
