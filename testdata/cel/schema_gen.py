# Writes testdata/cel/schema.yaml (run from any directory; expectations are read from the CRDs by hand).
import yaml, copy
B=[{'name':'svc','port':8080}]
def route(rules=None, **spec):
    s={'parentRefs':[{'name':'gw'}]}
    s.update(spec)
    s['rules']=rules if rules is not None else [{'backendRefs':B}]
    return {'apiVersion':'gateway.networking.k8s.io/v1','kind':'HTTPRoute','metadata':{'name':'r','namespace':'ns'},'spec':s}
def rule(**kw):
    r={'backendRefs':B}; r.update(kw); return r
def gw(listeners, **spec):
    s={'gatewayClassName':'gc','listeners':listeners}; s.update(spec)
    return {'apiVersion':'gateway.networking.k8s.io/v1','kind':'Gateway','metadata':{'name':'gw','namespace':'ns'},'spec':s}
def L(name='http',port=80,protocol='HTTP',**kw):
    d={'name':name,'port':port,'protocol':protocol}; d.update(kw); return d
TLS={'certificateRefs':[{'name':'cert'}]}
m=lambda p: {'path':{'type':'PathPrefix','value':p}}
hm=lambda **kw: {'type':'RequestHeaderModifier','requestHeaderModifier':kw}
BOTH=['standard','experimental']
cases=[]
def add(name, obj, fields=None, errors=None, channels=BOTH):
    c={'name':name,'channels':channels}
    if fields or errors:
        if fields: c['wantFields']=fields
        if errors: c['wantErrors']=errors
    else: c['valid']=True
    c['object']=obj; cases.append(c)
# HTTPRoute sizes
add('16 rules', route([rule() for _ in range(16)]))
add('17 rules', route([rule() for _ in range(17)]), ['spec.rules'], ['must have at most 16 items'])
add('64 matches in a rule', route([rule(matches=[m('/p%d'%i) for i in range(64)])]))
add('65 matches in a rule', route([rule(matches=[m('/p%d'%i) for i in range(65)])]), ['spec.rules[0].matches'], ['must have at most 64 items'])
add('128 matches in total', route([rule(matches=[m('/p%d'%i) for i in range(64)]) for _ in range(2)]))
add('129 matches in total', route([rule(matches=[m('/p%d'%i) for i in range(43)]) for _ in range(3)]), ['spec.rules'], ['the total number of matches across all rules in a route must be less than 128'])
add('32 parentRefs', route(parentRefs=[{'name':'gw','sectionName':'s%d'%i} for i in range(32)]))
add('33 parentRefs', route(parentRefs=[{'name':'gw','sectionName':'s%d'%i} for i in range(33)]), ['spec.parentRefs'], ['must have at most 32 items'])
add('17 hostnames', route(hostnames=['h%d.example.com'%i for i in range(17)]), ['spec.hostnames'], ['must have at most 16 items'])
add('wildcard hostname', route(hostnames=['*.example.com']))
add('hostname with a port', route(hostnames=['example.com:80']), ['spec.hostnames[0]'], ['should match'])
add('parentRef namespace upper case', route(parentRefs=[{'name':'gw','namespace':'NS'}]), ['spec.parentRefs[0].namespace'], ['should match'])
add('parentRef port 0', route(parentRefs=[{'name':'gw','port':0}]), ['spec.parentRefs[0].port'], ['greater than or equal to 1'])
add('parentRef sectionName upper case', route(parentRefs=[{'name':'gw','sectionName':'HTTP'}]), ['spec.parentRefs[0].sectionName'], ['should match'])
# matches
add('header match name with a space', route([rule(matches=[{'headers':[{'name':'a b','value':'x'}]}])]), ['spec.rules[0].matches[0].headers[0].name'], ['should match'])
add('17 header matches', route([rule(matches=[{'headers':[{'name':'h%d'%i,'value':'x'} for i in range(17)]}])]), ['spec.rules[0].matches[0].headers'], ['must have at most 16 items'])
add('header matched twice', route([rule(matches=[{'headers':[{'name':'h','value':'v1'},{'name':'h','value':'v2'}]}])]), ['spec.rules[0].matches[0].headers[1]'], ['Duplicate value'])
add('query param name with a space', route([rule(matches=[{'queryParams':[{'name':'a b','value':'x'}]}])]), ['spec.rules[0].matches[0].queryParams[0].name'], ['should match'])
add('query param matched twice', route([rule(matches=[{'queryParams':[{'name':'q','value':'v1'},{'name':'q','value':'v2'}]}])]), ['spec.rules[0].matches[0].queryParams[1]'], ['Duplicate value'])
add('header match value empty', route([rule(matches=[{'headers':[{'name':'h','value':''}]}])]), ['spec.rules[0].matches[0].headers[0].value'], ['at least 1 chars long'])
add('method lower case', route([rule(matches=[{'method':'get'}])]), ['spec.rules[0].matches[0].method'], ['supported values'])
add('path longer than 1024', route([rule(matches=[m('/'+'a'*1024)])]), ['spec.rules[0].matches[0].path.value'], ['may not be more than 1024'])
# filters
add('RequestHeaderModifier set, add, remove', route([rule(filters=[hm(set=[{'name':'a','value':'1'}],add=[{'name':'b','value':'2'}],remove=['c'])])]))
add('RequestHeaderModifier set names twice', route([rule(filters=[hm(set=[{'name':'a','value':'1'},{'name':'a','value':'2'}])])]), ['spec.rules[0].filters[0].requestHeaderModifier.set[1]'], ['Duplicate value'])
add('RequestHeaderModifier add names twice', route([rule(filters=[hm(add=[{'name':'a','value':'1'},{'name':'a','value':'2'}])])]), ['spec.rules[0].filters[0].requestHeaderModifier.add[1]'], ['Duplicate value'])
add('RequestHeaderModifier remove names twice', route([rule(filters=[hm(remove=['a','a'])])]), ['spec.rules[0].filters[0].requestHeaderModifier.remove[1]'], ['Duplicate value'])
add('RequestHeaderModifier 17 set entries', route([rule(filters=[hm(set=[{'name':'h%d'%i,'value':'1'} for i in range(17)])])]), ['spec.rules[0].filters[0].requestHeaderModifier.set'], ['must have at most 16 items'])
add('RequestHeaderModifier header name with a colon', route([rule(filters=[hm(set=[{'name':'a:b','value':'1'}])])]), ['spec.rules[0].filters[0].requestHeaderModifier.set[0].name'], ['should match'])
add('RequestHeaderModifier twice in a rule', route([rule(filters=[hm(remove=['a']),hm(remove=['b'])])]), ['spec.rules[0].filters'], ['RequestHeaderModifier filter cannot be repeated'])
add('ResponseHeaderModifier without its config', route([rule(filters=[{'type':'ResponseHeaderModifier'}])]), ['spec.rules[0].filters[0]'], ['filter.responseHeaderModifier must be specified for ResponseHeaderModifier filter.type'])
add('ResponseHeaderModifier twice in a rule', route([rule(filters=[{'type':'ResponseHeaderModifier','responseHeaderModifier':{'remove':['a']}}]*2)]), ['spec.rules[0].filters'], ['ResponseHeaderModifier filter cannot be repeated'])
add('unknown filter type', route([rule(filters=[{'type':'Rewrite'}])]), ['spec.rules[0].filters[0].type'], ['supported values'])
add('RequestRedirect and URLRewrite in one rule', route([rule(filters=[{'type':'RequestRedirect','requestRedirect':{'scheme':'https'}},{'type':'URLRewrite','urlRewrite':{'hostname':'a.example.com'}}])]), ['spec.rules[0].filters'], ['May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both'])
add('RequestRedirect twice in a rule', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'scheme':'https'}}]*2}]), ['spec.rules[0].filters'], ['RequestRedirect filter cannot be repeated'])
add('RequestRedirect without backendRefs', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'scheme':'https','statusCode':301}}]}]))
add('RequestRedirect status 307', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'statusCode':307}}]}]))
add('RequestRedirect status 304', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'statusCode':304}}]}]), ['spec.rules[0].filters[0].requestRedirect.statusCode'], ['supported values'])
add('RequestRedirect scheme ftp', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'scheme':'ftp'}}]}]), ['spec.rules[0].filters[0].requestRedirect.scheme'], ['supported values'])
add('RequestRedirect hostname with a wildcard', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'hostname':'*.example.com'}}]}]), ['spec.rules[0].filters[0].requestRedirect.hostname'], ['should match'])
add('RequestRedirect port 0', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'port':0}}]}]), ['spec.rules[0].filters[0].requestRedirect.port'], ['greater than or equal to 1'])
add('RequestRedirect ReplaceFullPath without replaceFullPath', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'path':{'type':'ReplaceFullPath'}}}]}]), ['spec.rules[0].filters[0].requestRedirect.path'], ['replaceFullPath must be specified when type is set to \'ReplaceFullPath\''])
add('RequestRedirect ReplaceFullPath with replacePrefixMatch', route([{'filters':[{'type':'RequestRedirect','requestRedirect':{'path':{'type':'ReplaceFullPath','replaceFullPath':'/a','replacePrefixMatch':'/b'}}}]}]), ['spec.rules[0].filters[0].requestRedirect.path'], ['type must be \'ReplacePrefixMatch\' when replacePrefixMatch is set'])
add('RequestRedirect ReplacePrefixMatch with an Exact match', route([{'matches':[{'path':{'type':'Exact','value':'/a'}}],'filters':[{'type':'RequestRedirect','requestRedirect':{'path':{'type':'ReplacePrefixMatch','replacePrefixMatch':'/b'}}}]}]), ['spec.rules[0]'], ['When using RequestRedirect filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified'])
add('URLRewrite ReplacePrefixMatch with a PathPrefix match', route([rule(matches=[m('/a')],filters=[{'type':'URLRewrite','urlRewrite':{'path':{'type':'ReplacePrefixMatch','replacePrefixMatch':'/b'}}}])]))
add('URLRewrite ReplacePrefixMatch with an Exact match', route([rule(matches=[{'path':{'type':'Exact','value':'/a'}}],filters=[{'type':'URLRewrite','urlRewrite':{'path':{'type':'ReplacePrefixMatch','replacePrefixMatch':'/b'}}}])]), ['spec.rules[0]'], ['When using URLRewrite filter with path.replacePrefixMatch, exactly one PathPrefix match must be specified'])
add('URLRewrite ReplacePrefixMatch with two PathPrefix matches', route([rule(matches=[m('/a'),m('/b')],filters=[{'type':'URLRewrite','urlRewrite':{'path':{'type':'ReplacePrefixMatch','replacePrefixMatch':'/b'}}}])]), ['spec.rules[0]'], ['exactly one PathPrefix match must be specified'])
add('URLRewrite twice in a rule', route([rule(filters=[{'type':'URLRewrite','urlRewrite':{'hostname':'a.example.com'}}]*2)]), ['spec.rules[0].filters'], ['URLRewrite filter cannot be repeated'])
add('RequestMirror twice in a rule', route([rule(filters=[{'type':'RequestMirror','requestMirror':{'backendRef':{'name':'m','port':80}}}]*2)]))
add('RequestMirror without port', route([rule(filters=[{'type':'RequestMirror','requestMirror':{'backendRef':{'name':'m'}}}])]), ['spec.rules[0].filters[0].requestMirror.backendRef'], ['Must have port for Service reference'])
add('17 filters in a rule', route([rule(filters=[{'type':'RequestMirror','requestMirror':{'backendRef':{'name':'m%d'%i,'port':80}}} for i in range(17)])]), ['spec.rules[0].filters'], ['must have at most 16 items'])
add('backendRef filter ResponseHeaderModifier', route([{'backendRefs':[{'name':'svc','port':8080,'filters':[{'type':'ResponseHeaderModifier','responseHeaderModifier':{'set':[{'name':'a','value':'b'}]}}]}]}]))
add('backendRef filter without its config', route([{'backendRefs':[{'name':'svc','port':8080,'filters':[{'type':'URLRewrite'}]}]}]), ['spec.rules[0].backendRefs[0].filters[0]'], ['filter.urlRewrite must be specified for URLRewrite filter.type'])
add('backendRef weight above 1000000', route([{'backendRefs':[{'name':'svc','port':8080,'weight':1000001}]}]), ['spec.rules[0].backendRefs[0].weight'], ['less than or equal to 1000000'])
add('17 backendRefs', route([{'backendRefs':[{'name':'s%d'%i,'port':80} for i in range(17)]}]), ['spec.rules[0].backendRefs'], ['must have at most 16 items'])
# retry and timeouts (v1.7.0: retry is Standard, attempts >= 0)
add('retry attempts 0 (v1.7.0)', route([rule(retry={'attempts':0,'codes':[503],'backoff':'100ms'})]))
add('retry codes twice', route([rule(retry={'codes':[503,503]})]), ['spec.rules[0].retry.codes[1]'], ['Duplicate value'])
add('timeouts 0s request', route([rule(timeouts={'request':'0s','backendRequest':'10s'})]))
# experimental-only fields
add('useDefaultGateways in standard', route(useDefaultGateways='All'), ['spec.useDefaultGateways'], ['experimental-channel field'], ['standard'])
add('useDefaultGateways in experimental', route(useDefaultGateways='All'), channels=['experimental'])
add('ExternalAuth filter in standard', route([rule(filters=[{'type':'ExternalAuth','externalAuth':{'protocol':'HTTP','backendRef':{'name':'auth','port':80},'http':{}}}])]), ['spec.rules[0].filters[0].externalAuth','spec.rules[0].filters[0].type'], ['experimental-channel field'], ['standard'])
add('ExternalAuth filter in experimental', route([rule(filters=[{'type':'ExternalAuth','externalAuth':{'protocol':'HTTP','backendRef':{'name':'auth','port':80},'http':{}}}])]), channels=['experimental'])
add('sessionPersistence in standard', route([rule(sessionPersistence={'absoluteTimeout':'1h'})]), ['spec.rules[0].sessionPersistence'], ['experimental-channel field'], ['standard'])
add('header value with a newline in experimental', route([rule(matches=[{'headers':[{'name':'h','value':'a\nb'}]}])]), ['spec.rules[0].matches[0].headers[0].value'], ['should match'], ['experimental'])
# Gateway
add('Gateway without gatewayClassName', gw([L()], gatewayClassName=None) , ['spec.gatewayClassName'], ['Required value'])
add('Gateway 64 listeners', gw([L('l%d'%i,1000+i) for i in range(64)]))
add('Gateway 65 listeners', gw([L('l%d'%i,1000+i) for i in range(65)]), ['spec.listeners'], ['must have at most 64 items'])
add('Gateway no listeners', gw([]), ['spec.listeners'], ['should have at least 1 items'])
add('listener name upper case', gw([L('HTTP')]), ['spec.listeners[0].name'], ['should match'])
add('listener port 65536', gw([L(port=65536)]), ['spec.listeners[0].port'], ['less than or equal to 65535'])
add('listener names twice', gw([L('a',80),L('a',81)]), ['spec.listeners[1]'], ['Duplicate value'])
add('listeners with the same port, protocol and hostname', gw([L('a',80,hostname='a.example.com'),L('b',80,hostname='a.example.com')]), ['spec.listeners'], ['Combination of port, protocol and hostname must be unique for each listener'])
add('listeners on one port with different hostnames', gw([L('a',80,hostname='a.example.com'),L('b',80,hostname='b.example.com')]))
add('listener hostname on TCP', gw([L('t',9000,'TCP',hostname='a.example.com')]), ['spec.listeners'], ["hostname must not be specified for protocols ['TCP', 'UDP']"])
add('listener hostname is an IP (the pattern allows it)', gw([L(hostname='10.0.0.1')]))
add('listener hostname upper case', gw([L(hostname='A.example.com')]), ['spec.listeners[0].hostname'], ['should match'])
add('HTTPS listener without tls (no rule requires it)', gw([L('https',443,'HTTPS')]))
add('TLS listener without tls', gw([L('tls',443,'TLS',hostname='a.example.com')]), ['spec.listeners'], ['tls mode must be set for protocol TLS'])
add('HTTPS listener with Passthrough', gw([L('https',443,'HTTPS',tls={'mode':'Passthrough'})]), ['spec.listeners'], ['tls mode must be Terminate for protocol HTTPS'])
add('HTTPS listener with certificateRefs', gw([L('https',443,'HTTPS',tls=TLS)]))
add('HTTPS listener with mode Terminate and no certificateRefs', gw([L('https',443,'HTTPS',tls={'mode':'Terminate'})]), ['spec.listeners[0].tls'], ['certificateRefs or options must be specified when mode is Terminate'])
add('HTTP listener with tls', gw([L(tls=TLS)]), ['spec.listeners'], ["tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']"])
add('TLS listener with Passthrough', gw([L('tls',443,'TLS',hostname='a.example.com',tls={'mode':'Passthrough'})]))
add('allowedRoutes kind HTTPRoute', gw([L(allowedRoutes={'namespaces':{'from':'All'},'kinds':[{'kind':'HTTPRoute'}]})]))
add('allowedRoutes from Selector without selector (no rule requires it)', gw([L(allowedRoutes={'namespaces':{'from':'Selector'}})]))
add('allowedRoutes from Other', gw([L(allowedRoutes={'namespaces':{'from':'Other'}})]), ['spec.listeners[0].allowedRoutes.namespaces.from'], ['supported values'])
add('address IP type with a hostname', gw([L()], addresses=[{'type':'IPAddress','value':'example.com'}]), ['spec.addresses[0].value'], ['must be of type ipv4'])
add('Hostname addresses twice', gw([L()], addresses=[{'type':'Hostname','value':'a.example.com'}]*2), ['spec.addresses'], ['Hostname values must be unique'])
add('defaultScope in standard', gw([L()], defaultScope='All'), ['spec.defaultScope'], ['experimental-channel field'], ['standard'])
add('defaultScope in experimental', gw([L()], defaultScope='All'), channels=['experimental'])
# GatewayClass
gc=lambda cn: {'apiVersion':'gateway.networking.k8s.io/v1','kind':'GatewayClass','metadata':{'name':'gc'},'spec':{'controllerName':cn}}
add('GatewayClass', gc('example.net/gateway-controller'))
add('GatewayClass controllerName without a path', gc('example'), ['spec.controllerName'], ['should match'])
for c in cases:
    if c['object']['kind']=='Gateway' and c['object']['spec'].get('gatewayClassName') is None: c['object']['spec'].pop('gatewayClassName')
hdr='''# Validation cases written from the CRD schemas (maxItems, patterns, enums,
# list-map keys, CEL rules) of config/crd/{standard,experimental}/
# gateway.networking.k8s.io_{httproutes,gateways,gatewayclasses}.yaml in
# github.com/kubernetes-sigs/gateway-api at commit
# 4564255ac2c35d582249b3cdf261bdf51c8bca32, with retry as v1.7.0 has it
# (Standard; attempts >= 0). The expectation of each case was read from the
# schema, not from gwretry's output. wantFields are field paths an error must
# name; wantErrors are substrings of the error.
'''
open('/work/wt-i9-validate/testdata/cel/schema.yaml','w').write(hdr+yaml.safe_dump({'cases':cases},sort_keys=False,width=100000,default_flow_style=None))
print(len(cases), sum(len(c['channels']) for c in cases))
