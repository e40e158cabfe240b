/*
Copyright 2023 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Modified by gwretry: a memoizing version of the Items, Properties,
// AdditionalProperties and WithTypeAndObjectMeta methods of
// k8s.io/apiextensions-apiserver v0.36.1 pkg/apiserver/schema/cel/model
// (adaptor.go); every other method is upstream's, by embedding.

package crdcel

import (
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiserver/pkg/cel/common"
)

// schemaAdaptor is upstream's model.Structural whose children are computed
// once per node instead of on every call. Upstream's Properties builds a
// new map of copies of every property's Structural each time it is called,
// and common.UnstructuredToVal calls it on every field access of a CEL
// rule (unstructuredMap.Find); that was half of the validation's time.
//
// The children are built lazily, each under its own sync.Once, and never
// written afterwards, so one adaptor serves concurrent validations. The
// values are those upstream would return: a child adaptor of a copy of
// each property (upstream copies too), of the same Items pointer, of the
// same AdditionalProperties schema; nil where upstream returns nil.
type schemaAdaptor struct {
	*model.Structural

	itemsOnce sync.Once
	items     common.Schema

	propsOnce sync.Once
	props     map[string]common.Schema

	addlOnce sync.Once
	addl     common.SchemaOrBool

	metaOnce sync.Once
	meta     common.Schema
}

var _ common.Schema = (*schemaAdaptor)(nil)

func newSchemaAdaptor(s *schema.Structural) *schemaAdaptor {
	return &schemaAdaptor{Structural: &model.Structural{Structural: s}}
}

// Items is upstream's model.Structural.Items, memoized.
func (s *schemaAdaptor) Items() common.Schema {
	s.itemsOnce.Do(func() {
		if s.Structural.Structural.Items != nil {
			s.items = newSchemaAdaptor(s.Structural.Structural.Items)
		}
	})
	return s.items
}

// Properties is upstream's model.Structural.Properties, memoized. The map
// is shared: callers only read it (common's values, equality and maplist
// code index it or range over it).
func (s *schemaAdaptor) Properties() map[string]common.Schema {
	s.propsOnce.Do(func() {
		if s.Structural.Structural.Properties == nil {
			return
		}
		res := make(map[string]common.Schema, len(s.Structural.Structural.Properties))
		for n, prop := range s.Structural.Structural.Properties {
			p := prop
			res[n] = newSchemaAdaptor(&p)
		}
		s.props = res
	})
	return s.props
}

// AdditionalProperties is upstream's model.Structural.AdditionalProperties,
// memoized.
func (s *schemaAdaptor) AdditionalProperties() common.SchemaOrBool {
	s.addlOnce.Do(func() {
		ap := s.Structural.Structural.AdditionalProperties
		if ap == nil {
			return
		}
		sb := &schemaOrBool{allows: ap.Bool}
		if ap.Structural != nil {
			sb.schema = newSchemaAdaptor(ap.Structural)
		}
		s.addl = sb
	})
	return s.addl
}

// WithTypeAndObjectMeta is upstream's model.Structural.WithTypeAndObjectMeta,
// memoized.
func (s *schemaAdaptor) WithTypeAndObjectMeta() common.Schema {
	s.metaOnce.Do(func() {
		s.meta = newSchemaAdaptor(model.WithTypeAndObjectMeta(s.Structural.Structural))
	})
	return s.meta
}

// schemaOrBool is upstream's model.StructuralOrBool with its schema
// adaptor built once.
type schemaOrBool struct {
	schema *schemaAdaptor
	allows bool
}

var _ common.SchemaOrBool = (*schemaOrBool)(nil)

func (sb *schemaOrBool) Schema() common.Schema {
	if sb.schema == nil {
		return nil
	}
	return sb.schema
}

func (sb *schemaOrBool) Allows() bool {
	return sb.allows
}
