//! What each object a Kustomization built adds to its cluster's graph: a child Kustomization,
//! a source, a HelmRelease, a ConfigMap or Secret others may substitute from, a Secret a
//! controller creates at runtime, an ArtifactGenerator. Worked out beside the build, on the
//! build's thread and in parallel over a large build's objects, so that registering them, which
//! runs on one thread between two waves of builds, only files what was found.

use crate::artifact::Generator;
use crate::model::{FluxKustomization, HelmRelease, Object, Source, KUSTOMIZE_GROUP};
use crate::runtime::RuntimeSecret;

/// What one object is to the graph.
pub(crate) enum Found {
    /// A ConfigMap or Secret of the core group.
    Produced,
    /// A Flux Kustomization, read from the object as built.
    Kustomization(Box<FluxKustomization>),
    /// Any other object that makes something below.
    Other(Box<Other>),
    /// An object that is none of these.
    Plain,
}

/// What an object that is neither a Kustomization nor a ConfigMap or Secret makes.
pub(crate) struct Other {
    pub(crate) runtime_secret: Option<RuntimeSecret>,
    pub(crate) generator: Option<Generator>,
    pub(crate) source: Option<Source>,
    /// Only when the object is not a source.
    pub(crate) helm_release: Option<HelmRelease>,
}

/// [`Found`] for each object, in the objects' order.
pub(crate) fn classify(objects: &[Object]) -> Vec<Found> {
    crate::parallel::map(objects.iter().collect(), classify_one)
}

fn classify_one(object: &Object) -> Found {
    match (object.group(), object.kind()) {
        ("", "ConfigMap") | ("", "Secret") => Found::Produced,
        (KUSTOMIZE_GROUP, "Kustomization") => {
            Found::Kustomization(Box::new(FluxKustomization::from_object(object.clone())))
        }
        _ => {
            let source = Source::from_object(object);
            let helm_release = match source {
                Some(_) => None,
                None => HelmRelease::from_object(object),
            };
            let other = Other {
                runtime_secret: crate::runtime::secret_created_by(object),
                generator: Generator::from_object(object),
                source,
                helm_release,
            };
            let makes = other.runtime_secret.is_some()
                || other.generator.is_some()
                || other.source.is_some()
                || other.helm_release.is_some();
            match makes {
                true => Found::Other(Box::new(other)),
                false => Found::Plain,
            }
        }
    }
}
